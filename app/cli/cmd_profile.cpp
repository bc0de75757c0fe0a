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
  std::string float32_precision = "highest";
  std::string model;
  std::vector<std::string> inputs;
  std::string dtype = "float32";
  std::string modes = "eager,default";
  std::string backends;
  std::string out;
  std::string device = "auto";
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
  runtime::set_float32_matmul_precision(a.float32_precision);
  auto dt = ir::parse_dtype(a.dtype);
  if (!dt) throw Error("--dtype '" + a.dtype + "': unknown dtype");
  std::vector<InputSpec> specs;
  for (const auto& t : a.inputs) specs.push_back(parse_input_spec(t, *dt));
  if (a.iters < 1) throw Error("--iters " + std::to_string(a.iters) + ": must be at least 1");
  if (a.iters > kMaxIters)
    throw Error("--iters " + std::to_string(a.iters) + ": at most " + std::to_string(kMaxIters) +
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
  refuse_input_as_output(a.out, {a.model});
  auto s = api::profile(a.model, specs, o, a.out, progress);
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
    return 1;
  }
  return 0;
}

}  // namespace

std::function<int()> add_profile(CLI::App& app) {
  auto args = std::make_shared<ProfileArgs>();
  auto* cmd = app.add_subcommand("profile", "Run a model eagerly and in every compile mode, measure each (compile time, "
                                            "first call, steady state, kernels, host overhead, error vs eager) and "
                                            "write a session file.");
  cmd->add_option("model", args->model, "TorchScript archive (.pt) or torch.export program (.pt2)")->required();
  cmd->add_option("-i,--input", args->inputs, kInputSpecHelp)->required();
  cmd->add_option("--dtype", args->dtype, "Default dtype of the inputs")->capture_default_str();
  cmd->add_option("--float32-matmul-precision", args->float32_precision,
                  "float32 matmul precision on the GPU, as torch.set_float32_matmul_precision: highest (PyTorch's default: float32 math), high or medium (TF32 tensor cores); cuDNN convolutions use TF32 as PyTorch allows by default. The tolerance follows: float32 results that went through TF32 are held to rtol 2e-3, atol 2e-3")
      ->capture_default_str();
  cmd->add_option("--modes", args->modes, "Comma-separated: eager, default, reduce-overhead, max-autotune")
      ->capture_default_str();
  cmd->add_option("--backends", args->backends, "Extra peers measured in default mode: torchscript, cudagraphs, aot_eager");
  cmd->add_option("--device", args->device, "auto (cuda when available), cpu or cuda")->capture_default_str();
  cmd->add_option("--iters", args->iters, "Timed iterations per run after warm-up")->capture_default_str();
  cmd->add_option("-o,--output", args->out, "Session file to write (.kiln)")->required();
  return [args] { return run(*args); };
}

}  // namespace kiln::cli
