// kiln — the headless workbench: inspect, explain, compile, check, profile, report, import, diff.
#include <vector>

#include "app/cli/commands.h"
#include "app/cli/terminal_output.h"
#include "engine/api/kiln.h"

int main(int argc, char** argv) {
  using namespace kiln::cli;  // NOLINT
  TerminalOutput terminal;  // text from logs, sessions and models never drives the terminal
  CLI::App app{"Kiln: capture, compile and profile TorchScript models; inspect where they break and why they recompile."};
  app.name("kiln");
  app.set_version_flag("--version", "kiln " + kiln::api::version_description() + " (LibTorch " + kiln::api::libtorch_version() + ")");
  app.require_subcommand(1);
  const std::vector<Command> commands = {add_inspect(app), add_explain(app), add_compile(app),
                                         add_check(app),   add_profile(app), add_report(app),
                                         add_trace(app),   add_stats(app),   add_import(app),
                                         add_diff(app)};
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : kExitUsage;  // --help and --version are the parse "errors" that exit 0
  }
  for (const auto& c : commands)
    if (c.app->parsed()) return run_command(c);
  return 0;
}
