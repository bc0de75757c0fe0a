// kiln — the headless workbench: inspect, explain, compile, check, profile, report, import, diff.
// Built twice: `kiln` (KILN_CLI_MODEL_COMMANDS 0) links no LibTorch and runs the session commands
// itself (report, trace, stats, import, diff: no LibTorch to load and tear down at every call);
// `kiln-model` (1) has every command, and `kiln` executes it for the ones that load a model.
#include <vector>

#include "app/cli/commands.h"
#include "app/cli/terminal_output.h"
#include "engine/api/kiln.h"

#if !KILN_CLI_MODEL_COMMANDS
#include <torch/version.h>  // the version macros only: nothing of LibTorch is linked
#endif

namespace {

std::string libtorch_version() {
#if KILN_CLI_MODEL_COMMANDS
  return kiln::api::libtorch_version();
#else
  return std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
         std::to_string(TORCH_VERSION_PATCH);
#endif
}

}  // namespace

int main(int argc, char** argv) {
  using namespace kiln::cli;  // NOLINT
#if !KILN_CLI_MODEL_COMMANDS
  if (argc > 1 && is_model_command(argv[1])) return exec_model_commands(argv);
#endif
  TerminalOutput terminal;  // text from logs, sessions and models never drives the terminal
  CLI::App app{"Kiln: capture, compile and profile TorchScript models; inspect where they break and why they recompile."};
  app.name("kiln");
  app.set_version_flag("--version", "kiln " + kiln::api::version_description() + " (LibTorch " + libtorch_version() + ")");
  app.require_subcommand(1);
#if KILN_CLI_MODEL_COMMANDS
  const std::vector<Command> commands = {add_inspect(app), add_explain(app), add_compile(app),
                                         add_check(app),   add_profile(app), add_report(app),
                                         add_trace(app),   add_stats(app),   add_import(app),
                                         add_diff(app)};
#else
  std::vector<Command> commands;
  for (const auto& c : kModelCommands) commands.push_back(add_model_command(app, c.name, c.description, argv));
  for (auto add : {add_report, add_trace, add_stats, add_import, add_diff}) commands.push_back(add(app));
#endif
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : kExitUsage;  // --help and --version are the parse "errors" that exit 0
  }
  for (const auto& c : commands)
    if (c.app->parsed()) return run_command(c);
  return 0;
}
