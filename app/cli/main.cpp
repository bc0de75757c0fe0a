// kiln — the headless workbench: inspect, explain, compile, check, profile, report, import.
#include <iostream>

#include "app/cli/commands.h"
#include "engine/api/kiln.h"

int main(int argc, char** argv) {
  CLI::App app{"Kiln: capture, compile and profile TorchScript models; inspect where they break and why they recompile."};
  app.name("kiln");
  app.set_version_flag("--version", "kiln " + kiln::api::version() + " (LibTorch " + kiln::api::libtorch_version() + ")");
  app.require_subcommand(1);
  auto inspect = kiln::cli::add_inspect(app);
  auto explain = kiln::cli::add_explain(app);
  auto compile = kiln::cli::add_compile(app);
  auto check = kiln::cli::add_check(app);
  auto profile = kiln::cli::add_profile(app);
  auto report = kiln::cli::add_report(app);
  auto trace = kiln::cli::add_trace(app);
  auto imports = kiln::cli::add_import(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    // For `kiln check` exit status 1 means a mismatch: a command line it cannot parse is bad input (2).
    if (code != 0 && argc > 1 && std::string(argv[1]) == "check") return 2;
    return code;
  }
  try {
    for (auto* sub : app.get_subcommands()) {
      if (sub->get_name() == "inspect") return inspect();
      if (sub->get_name() == "explain") return explain();
      if (sub->get_name() == "compile") return compile();
      if (sub->get_name() == "check") return check();
      if (sub->get_name() == "profile") return profile();
      if (sub->get_name() == "report") return report();
      if (sub->get_name() == "trace") return trace();
      if (sub->get_name() == "import") return imports();
    }
  } catch (const kiln::Error& e) {
    std::cerr << "kiln: error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "kiln: internal error: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
