// kiln explain MODEL.pt --input 4x64 [--input 8x64 ...] [--json] [--dynamic auto|true|false] [--cache-limit N]
//   [--fullgraph] [--disable]
// Each --input is one forward call (models with several arguments: --input 4x64,4x64 is not a shape;
// use --call "4x64 8x64" for one call with two arguments).
#include <iostream>
#include <memory>
#include <sstream>

#include "app/cli/commands.h"
#include "engine/api/kiln.h"

namespace kiln::cli {

namespace {

struct ExplainArgs {
  std::string model;
  std::vector<std::string> inputs;
  std::vector<std::string> calls;
  std::string dtype = "float32";
  std::string dynamic = "auto";
  std::string backend = "eager";
  int cache_limit = 8;
  bool fullgraph = false;
  bool disable = false;
  bool json = false;
};

int run(const ExplainArgs& a) {
  auto dt = ir::parse_dtype(a.dtype);
  if (!dt) throw Error("--dtype '" + a.dtype + "': unknown dtype");
  std::vector<std::vector<InputSpec>> calls;
  for (const auto& t : a.inputs) calls.push_back({parse_input_spec(t, *dt)});
  for (const auto& c : a.calls) {
    std::istringstream in(c);
    std::vector<InputSpec> specs;
    for (std::string t; in >> t;) specs.push_back(parse_input_spec(t, *dt));
    calls.push_back(specs);
  }
  if (calls.empty()) throw Error("give at least one --input (or --call)");
  api::CaptureOptions o;
  if (a.dynamic == "true") o.dynamic = true;
  else if (a.dynamic == "false") o.dynamic = false;
  else if (a.dynamic != "auto") throw Error("--dynamic '" + a.dynamic + "': use auto, true or false");
  o.cache_limit = a.cache_limit;
  o.backend = a.backend;
  o.fullgraph = a.fullgraph;
  o.disable = a.disable;
  auto r = api::explain(a.model, calls, o);
  std::cout << (a.json ? api::explain_json(r) + "\n" : api::explain_text(r));
  for (const auto& c : r.calls)
    if (!c.equal) return 3;
  return 0;
}

}  // namespace

std::function<int()> add_explain(CLI::App& app) {
  auto args = std::make_shared<ExplainArgs>();
  auto* cmd = app.add_subcommand("explain", "Run the model through Kiln's capture over a sequence of calls and report "
                                            "graphs, graph breaks (deduplicated, with lines and hints), guards and "
                                            "recompiles with their reasons.");
  cmd->add_option("model", args->model, "TorchScript archive (.pt) or torch.export program (.pt2)")->required();
  cmd->add_option("-i,--input", args->inputs, std::string("One call with one argument (repeat: one call each, in order). ") + kInputSpecHelp);
  cmd->add_option("--call", args->calls, "One call with several arguments: \"4x64 4x8:int64\"");
  cmd->add_option("--dtype", args->dtype, "Default dtype of the inputs")->capture_default_str();
  cmd->add_option("--dynamic", args->dynamic, "auto (dynamic after the first size change), true, or false")
      ->capture_default_str();
  cmd->add_option("--backend", args->backend, "eager (exact), aot_eager or kiln")->capture_default_str();
  cmd->add_option("--cache-limit", args->cache_limit, "Cache entries per region before running it eagerly")
      ->capture_default_str();
  cmd->add_flag("--fullgraph", args->fullgraph, "Treat any graph break as an error");
  cmd->add_flag("--disable", args->disable, "Run eagerly (no capture), for A/B checks");
  cmd->add_flag("--json", args->json, "Print JSON");
  return [args] { return run(*args); };
}

}  // namespace kiln::cli
