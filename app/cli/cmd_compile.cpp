// kiln compile MODEL.pt --input 8x64 [--backend kiln|eager|aot_eager] [--mode default] [--conv-layout L]
//   [--dump DIR] [--json]
#include <cstdlib>
#include <iostream>
#include <memory>

#include <unistd.h>

#include "app/cli/commands.h"
#include "app/cli/terminal_output.h"
#include "engine/api/kiln.h"
#include "engine/api/progress.h"

namespace kiln::cli {

constexpr int kMaxChecks = 1000;

namespace {

struct CompileArgs {
  std::string float32_precision = "highest";
  std::string model;
  std::vector<std::string> inputs;
  std::string dtype = "float32";
  std::string backend = "kiln";
  std::string mode = "default";
  std::string dump;
  std::string dynamic = "auto";
  std::string device = "cpu";
  std::string conv_layout = "auto";
  std::vector<std::string> plugins;
  int checks = 3;
  bool json = false;
};

int run(const CompileArgs& a) {
  runtime::set_float32_matmul_precision(a.float32_precision);
  auto dt = ir::parse_dtype(a.dtype);
  if (!dt) throw Error("--dtype '" + a.dtype + "': unknown dtype");
  std::vector<InputSpec> specs;
  for (const auto& t : a.inputs) specs.push_back(parse_input_spec(t, *dt));
  if (a.checks < 1) throw Error("--checks " + std::to_string(a.checks) + ": must be at least 1");
  if (a.checks > kMaxChecks)
    throw Error("--checks " + std::to_string(a.checks) + ": at most " + std::to_string(kMaxChecks) +
                " calls (each compares every output with eager)");
  if (a.mode != "default" && a.mode != "reduce-overhead" && a.mode != "max-autotune")
    throw Error("--mode '" + a.mode + "': use default, reduce-overhead or max-autotune");
  for (const auto& p : a.plugins) api::load_backend_plugin(p);
  api::CaptureOptions o;
  o.backend = a.backend;
  o.mode = a.mode;
  if (a.conv_layout != "auto" && a.conv_layout != "channels-last" && a.conv_layout != "contiguous")
    throw Error("--conv-layout '" + a.conv_layout + "': use auto, channels-last or contiguous");
  o.conv_layout = a.conv_layout;
  if (a.dynamic == "true") o.dynamic = true;
  else if (a.dynamic == "false") o.dynamic = false;
  else if (a.dynamic != "auto") throw Error("--dynamic '" + a.dynamic + "': use auto, true or false");
  std::string dump = a.dump;
  if (dump.empty())
    if (const char* d = std::getenv("KILN_DUMP_DIR"); d && *d) dump = d;
  // max-autotune times candidates on the first call: one updating line on stderr says how far.
  const bool tty = ::isatty(2);
  auto shown = std::make_shared<bool>(false);
  runtime::ScopedTuningProgress tuning([tty, shown](const std::string& kernel, int done, int total) {
    if (!tty && done != total) return;  // logs get one line per tuned kernel
    *shown = true;
    if (tty) carriage_return(std::cerr);
    std::cerr << "max-autotune: " << kernel << " " << done << "/" << total << " candidates"
              << (tty ? "        " : "\n") << std::flush;
  });
  auto r = api::compile(a.model, specs, o, dump, a.checks, a.device);
  if (tty && *shown) std::cerr << "\n";
  std::cout << (a.json ? api::compile_json(r) + "\n" : api::compile_text(r));
  if (!a.json && !dump.empty()) std::cout << "stage dumps written under " << dump << "\n";
  return r.within_tolerance ? 0 : 3;
}

}  // namespace

std::function<int()> add_compile(CLI::App& app) {
  auto args = std::make_shared<CompileArgs>();
  auto* cmd = app.add_subcommand("compile", "Capture and compile a model with a backend; print the kernels per region, "
                                            "what each fuses, extern and fallback calls, compile time by stage, and a "
                                            "check against LibTorch eager.");
  cmd->add_option("model", args->model, "TorchScript archive (.pt) or torch.export program (.pt2)")->required();
  cmd->add_option("-i,--input", args->inputs, kInputSpecHelp)->required();
  cmd->add_option("--dtype", args->dtype, "Default dtype of the inputs")->capture_default_str();
  cmd->add_option("--float32-matmul-precision", args->float32_precision,
                  "float32 matmul precision on the GPU, as torch.set_float32_matmul_precision: highest (PyTorch's default: float32 math), high or medium (TF32 tensor cores); cuDNN convolutions use TF32 as PyTorch allows by default. The tolerance follows: float32 results that went through TF32 are held to rtol 2e-3, atol 2e-3")
      ->capture_default_str();
  cmd->add_option("--backend", args->backend, "kiln (fusing C++ codegen), aot_eager, eager, or a plugin's")
      ->capture_default_str();
  cmd->add_option("--mode", args->mode, "default, reduce-overhead or max-autotune")->capture_default_str();
  cmd->add_option("--dynamic", args->dynamic, "auto, true or false")->capture_default_str();
  cmd->add_option("--device", args->device, "cpu (C++ kernels) or cuda (CUDA kernels through NVRTC)")->capture_default_str();
  cmd->add_option("--conv-layout", args->conv_layout,
                  "Storage of convolution chains: auto (channels-last on cuda), channels-last or contiguous")
      ->capture_default_str();
  cmd->add_option("--dump", args->dump, "Write every stage (captured graph, loop IR, fusion, source) under DIR "
                                        "(also KILN_DUMP_DIR)");
  cmd->add_option("--plugin", args->plugins, "Load backends from a shared library");
  cmd->add_option("--checks", args->checks, "Calls checked against eager (fresh random inputs each)")->capture_default_str();
  cmd->add_flag("--json", args->json, "Print JSON");
  return [args] { return run(*args); };
}

}  // namespace kiln::cli
