// kiln — the headless workbench: inspect, explain, compile, check, profile, report, import.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "app/cli/commands.h"
#include "app/cli/terminal_output.h"
#include "engine/api/kiln.h"

int main(int argc, char** argv) {
  kiln::cli::TerminalOutput terminal;  // text from logs, sessions and models never drives the terminal
  CLI::App app{"Kiln: capture, compile and profile TorchScript models; inspect where they break and why they recompile."};
  app.name("kiln");
  app.set_version_flag("--version", "kiln " + kiln::api::version_description() + " (LibTorch " + kiln::api::libtorch_version() + ")");
  app.require_subcommand(1);
  auto inspect = kiln::cli::add_inspect(app);
  auto explain = kiln::cli::add_explain(app);
  auto compile = kiln::cli::add_compile(app);
  auto check = kiln::cli::add_check(app);
  auto profile = kiln::cli::add_profile(app);
  auto report = kiln::cli::add_report(app);
  auto trace = kiln::cli::add_trace(app);
  auto stats = kiln::cli::add_stats(app);
  auto imports = kiln::cli::add_import(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // A command line Kiln cannot parse is a usage error: exit status 2 for every command (CLI11's
    // own codes, 106 for a missing option, would read as anything else); --help and --version exit 0.
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  try {
    int status = 0;
    for (auto* sub : app.get_subcommands()) {
      const std::string name = sub->get_name();
      if (name == "inspect") status = inspect();
      else if (name == "explain") status = explain();
      else if (name == "compile") status = compile();
      else if (name == "check") status = check();
      else if (name == "profile") status = profile();
      else if (name == "report") status = report();
      else if (name == "trace") status = trace();
      else if (name == "stats") status = stats();
      else if (name == "import") status = imports();
    }
    // Output that never arrived (a full disk, /dev/full, a closed pipe) is an error, not a success.
    std::cout.flush();
    if (!std::cout || std::fflush(stdout) != 0 || std::ferror(stdout)) {
      std::cerr << "kiln: error: writing to standard output failed (" << std::strerror(errno) << ")\n";
      return status == 0 ? 1 : status;
    }
    return status;
  } catch (const kiln::Error& e) {
    std::cerr << "kiln: error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    // One line: a library's backtrace is for a bug report, not for the terminal.
    // KILN_BACKTRACE=1 (with TORCH_SHOW_CPP_STACKTRACES=1 for LibTorch's) prints it all.
    std::string what = e.what();
    if (!std::getenv("KILN_BACKTRACE")) what = what.substr(0, what.find('\n'));
    std::cerr << "kiln: internal error: " << what << "\n";
    return 2;
  }
  return 0;
}
