// kiln diff A B [--format md|html|json] [-o FILE] [--run-a RUN] [--run-b RUN]
// Compares two runs: each side a .kiln session or anything `kiln import` takes (a TORCH_TRACE log
// or directory, a profiler trace). Runs side by side, device time by module and source line, graph
// breaks added and removed, and the compiled regions whose guards, recompiles or graphs differ.
#include <iostream>

#include "app/cli/commands.h"
#include "engine/api/files.h"
#include "engine/api/kiln.h"
#include "engine/api/report.h"

namespace kiln::cli {

namespace {

struct DiffArgs {
  std::string a, b;
  std::string format = "md";
  std::string out;
  std::string run_a, run_b;
};

int run(const DiffArgs& a) {
  if (a.format != "html" && a.format != "md" && a.format != "json")
    throw Error("--format '" + a.format + "': use md, html or json");
  if (!a.out.empty()) refuse_input_as_output(a.out, {a.a, a.b});
  api::DiffOptions o;
  o.run_a = a.run_a;
  o.run_b = a.run_b;
  auto d = api::diff(a.a, a.b, o);
  std::string text = a.format == "html" ? report::render_diff_html(d)
                     : a.format == "md" ? report::render_diff_markdown(d)
                                        : report::render_diff_json(d);
  if (a.out.empty()) {
    std::cout << text;
  } else {
    OutputLock lock(a.out);
    write_file_atomically(a.out, text);
    std::cerr << "diff written to " << a.out << "\n";
  }
  return 0;
}

}  // namespace

Command add_diff(CLI::App& app) {
  auto [cmd, args, command] = subcommand<DiffArgs>(app, "diff",
      "Compare two runs (Kiln sessions, TORCH_TRACE logs or directories, profiler traces): runs side by side, "
      "device time by nn.Module and source line, graph breaks added and removed, guards, recompiles and graphs that "
      "differ per region.");
  cmd.add_option("a", args.a, "The first side (A): a .kiln session or anything kiln import takes")->required();
  cmd.add_option("b", args.b, "The second side (B)")->required();
  cmd.add_option("--format", args.format, "md, html or json")->capture_default_str();
  add_output_option(cmd, args.out, "Output file (stdout when absent)");
  cmd.add_option("--run-a", args.run_a,
                 "Which run of A the time by structure reads: a mode, MODE/BACKEND or a peer backend (default: the "
                 "fastest compiled run that recorded kernels)");
  cmd.add_option("--run-b", args.run_b, "The same for B");
  return command(run);
}

}  // namespace kiln::cli
