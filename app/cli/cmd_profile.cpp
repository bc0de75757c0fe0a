// kiln profile MODEL.pt --input 8x64 [--input ...] --modes eager,default,reduce-overhead,max-autotune
//   [--backends kiln,cudagraphs,torchscript] [--iters N] -o run.kiln
#include <unistd.h>

#include <iostream>
#include <memory>
#include <sstream>

#include "app/cli/commands.h"
#include "app/cli/terminal_output.h"
#include "engine/api/files.h"
#include "engine/api/kiln.h"

namespace kiln::cli {

constexpr int kMaxIters = 100000;

namespace {

struct ProfileArgs {
  ModelArgs model;
  PrecisionArgs precision;
  std::string modes = "eager,default";
  std::string backends;
  std::string out;
  std::string device;  // set by add_device_option
  int iters = 50;
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string t; std::getline(in, t, ',');)
    if (!t.empty()) out.push_back(t);
  return out;
}

int run(const ProfileArgs& a) {
  a.precision.apply();
  api::check_product_bound();
  auto specs = a.model.specs();
  check_count("--iters", a.iters, kMaxIters,
              " (the median settles within a few hundred; more only makes the run last hours)");
  api::ProfileOptions o;
  o.modes = split(a.modes);
  o.backends = split(a.backends);
  o.iters = a.iters;
  o.device = a.device;
  bool tty = ::isatty(2);
  auto progress = [tty](const std::string& what, int done, int total) {
    int width = 24, filled = total ? done * width / total : width;
    if (tty) carriage_return(std::cerr);
    std::cerr << "[" << std::string(filled, '#') << std::string(width - filled, ' ') << "] " << done
              << "/" << total << " " << what << (tty ? "            " : "\n") << std::flush;
  };
  refuse_input_as_output(a.out, {a.model.path});
  auto s = api::profile(a.model.path, specs, o, a.out, progress);
  if (tty) std::cerr << "\n";
  std::cout << api::runs_table(s);
  std::cout << "session written to " << a.out << " (open it with kiln-gui, or kiln report " << a.out << ")\n";
  // A failed run is kept in the session as a row with its error; the command still says it failed.
  int failed = 0;
  std::string first;
  for (const auto& r : s.runs)
    if (r.status.rfind("failed", 0) == 0 && failed++ == 0) first = r.mode + " / " + r.backend + ": " + r.status;
  if (failed) {
    std::cerr << "kiln: error: " << failed << " run" << (failed == 1 ? "" : "s") << " failed (kept in " << a.out
              << "); first: " << first << "\n";
    return kExitError;
  }
  return 0;
}

}  // namespace

Command add_profile(CLI::App& app) {
  auto [cmd, args, command] = subcommand<ProfileArgs>(app, "profile", kProfileDescription);
  add_model_options(cmd, args.model);
  add_precision_option(cmd, args.precision);
  cmd.add_option("--modes", args.modes, "Comma-separated: eager, default, reduce-overhead, max-autotune")
      ->capture_default_str();
  cmd.add_option("--backends", args.backends,
                 "Extra peers measured in default mode: torchscript, cudagraphs, aot_eager");
  add_device_option(cmd, args.device, DeviceDefault::Auto);
  cmd.add_option("--iters", args.iters, "Timed iterations per run after warm-up")->capture_default_str();
  add_output_option(cmd, args.out, "Session file to write (.kiln)")->required();
  return command(run);
}

}  // namespace kiln::cli
