// kiln explain MODEL.pt --input 4x64 [--input 8x64 ...] [--json] [--dynamic auto|true|false] [--cache-limit N]
//   [--fullgraph] [--disable] [--cost [--cost-rounds N]] [--what-if [--what-if-rounds N]] [-o session.kiln]
// Each --input is one forward call (models with several arguments: --input 4x64,4x64 is not a shape;
// use --call "4x64 8x64" for one call with two arguments).
#include <iostream>
#include <memory>
#include <optional>

#include "app/cli/commands.h"
#include "engine/api/files.h"
#include "engine/api/kiln.h"
#include "engine/api/what_if.h"

namespace kiln::cli {

namespace {

struct ExplainArgs {
  ModelArgs model;  // each --input is a call of its own
  std::vector<std::string> calls;
  std::string dynamic;  // set by add_dynamic_option
  std::string backend = "eager";
  int cache_limit = 8;
  bool fullgraph = false;
  bool disable = false;
  bool json = false;
  bool cost = false;
  int cost_rounds = 20;
  bool what_if = false;
  int what_if_rounds = 20;
  std::string out;
};

int run(const ExplainArgs& a) {
  std::vector<std::vector<InputSpec>> calls;
  api::check_product_bound();
  for (const auto& spec : a.model.specs()) calls.push_back({spec});
  for (const auto& c : a.calls) calls.push_back(api::parse_call(c, a.model.dtype));
  if (calls.empty()) throw Error("give at least one --input (or --call)");
  api::CompileOptions o;
  o.dynamic = api::parse_dynamic(a.dynamic);
  o.cache_limit = a.cache_limit;
  o.backend = a.backend;
  o.fullgraph = a.fullgraph;
  o.disable = a.disable;
  if (!a.out.empty()) refuse_input_as_output(a.out, {a.model.path});
  auto r = api::explain(a.model.path, calls, o);
  std::string text = api::explain_text(r);
  std::optional<runtime::ExplainCosts> costs;
  if (a.cost) {
    costs = runtime::measure_explain_costs(a.model.path, calls, o, a.cost_rounds);
    text += runtime::explain_costs_text(*costs);
  }
  if (a.what_if) {
    auto w = api::what_if(a.model.path, calls, o, a.what_if_rounds);
    text += api::what_if_text(w);
    if (a.json)
      text = runtime::explain_json_with_what_if(r, w, costs ? runtime::explain_costs_json(*costs) : "") + "\n";
  } else if (a.json) {
    text = (costs ? runtime::explain_json_with_costs(r, *costs) : api::explain_json(r)) + "\n";
  }
  if (!a.out.empty()) {
    api::write_explain_session(a.out, a.model.path, calls, o, r, costs ? &*costs : nullptr);
    if (!a.json)
      text += "\nsession written to " + a.out + " (open it with kiln-gui, or kiln report " + a.out + ")\n";
  }
  std::cout << text;
  for (const auto& c : r.calls)
    if (!c.equal) return kExitOutputsDiffer;
  return 0;
}

}  // namespace

Command add_explain(CLI::App& app) {
  auto [cmd, args, command] = subcommand<ExplainArgs>(app, "explain", kExplainDescription);
  add_model_options(cmd, args.model, InputIs::Call);
  cmd.add_option("--call", args.calls, "One call with several arguments: \"4x64 4x8:int64\"");
  add_dynamic_option(cmd, args.dynamic, kDynamicDefault);
  // Not add_backend_options: explain checks capture itself, so its default is the exact eager backend,
  // and it has no --mode or --plugin.
  cmd.add_option("--backend", args.backend, "eager (exact), aot_eager or kiln")->capture_default_str();
  cmd.add_option("--cache-limit", args.cache_limit, "Cache entries per region before running it eagerly")
      ->capture_default_str();
  cmd.add_flag("--fullgraph", args.fullgraph, "Treat any graph break as an error");
  cmd.add_flag("--disable", args.disable, "Run eagerly (no capture), for A/B checks");
  cmd.add_flag("--cost", args.cost,
               "Measure what each graph break and each recompile costs, and rerun with dynamic=true when a "
               "dimension kept changing");
  cmd.add_option("--cost-rounds", args.cost_rounds, "Timed passes through the calls for --cost")->capture_default_str();
  cmd.add_flag("--what-if", args.what_if,
               "Remove each graph break where that is sound (a print dropped, a scalar read kept as a 0-d tensor, a "
               "data-dependent if run as both branches plus where), check the result against eager and measure the "
               "speedup of fixing each alone and all together; say why where a break cannot be removed");
  cmd.add_option("--what-if-rounds", args.what_if_rounds, "Timed passes through the calls for --what-if")
      ->capture_default_str();
  add_json_flag(cmd, args.json);
  add_output_option(cmd, args.out,
                    "Session file to write (.kiln): the breaks, regions and recompiles, and with --cost what each "
                    "break and recompile cost");
  return command(run);
}

}  // namespace kiln::cli
