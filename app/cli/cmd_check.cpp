// kiln check MODEL.pt --input 8x64 [--backend kiln] [--mode default] [--rtol R] [--atol A] [--seed N] [--json]
//
// Exit status: 0 when the compiled outputs match eager, 1 on a mismatch (with the report naming
// the first differing region and kernel), 2 when the check cannot run (bad model, inputs or options).
#include <iostream>
#include <memory>

#include <optional>

#include "app/cli/commands.h"
#include "engine/api/kiln.h"

namespace kiln::cli {

namespace {

struct CheckArgs {
  std::string float32_precision = "highest";
  std::string model;
  std::vector<std::string> inputs;
  std::string dtype = "float32";
  std::string backend = "kiln";
  std::string mode = "default";
  std::string dynamic = "false";
  std::vector<std::string> plugins;
  std::optional<double> rtol;  // unset: by dtype and precision
  std::optional<double> atol;
  uint64_t seed = 0;
  bool json = false;
};

int run(const CheckArgs& a) {
  runtime::set_float32_matmul_precision(a.float32_precision);
  auto dt = ir::parse_dtype(a.dtype);
  if (!dt) throw Error("--dtype '" + a.dtype + "': unknown dtype");
  std::vector<InputSpec> specs;
  for (const auto& t : a.inputs) specs.push_back(parse_input_spec(t, *dt));
  if (a.mode != "default" && a.mode != "reduce-overhead" && a.mode != "max-autotune")
    throw Error("--mode '" + a.mode + "': use default, reduce-overhead or max-autotune");
  for (const auto& p : a.plugins) api::load_backend_plugin(p);
  api::CheckOptions o;
  o.capture.backend = a.backend;
  o.capture.mode = a.mode;
  if (a.dynamic == "true") o.capture.dynamic = true;
  else if (a.dynamic == "false") o.capture.dynamic = false;
  else if (a.dynamic != "auto") throw Error("--dynamic '" + a.dynamic + "': use auto, true or false");
  o.rtol = a.rtol;
  o.atol = a.atol;
  o.seed = a.seed;
  auto r = api::check(a.model, specs, o);
  std::cout << (a.json ? api::check_json(r) + "\n" : api::check_text(r));
  return r.match ? 0 : 1;
}

}  // namespace

std::function<int()> add_check(CLI::App& app) {
  auto args = std::make_shared<CheckArgs>();
  auto* cmd = app.add_subcommand(
      "check",
      "Check a compiled model against LibTorch eager on the same random inputs; on a mismatch, name the first "
      "region and the first kernel whose outputs differ. Exit 0: match, 1: mismatch, 2: bad input.");
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
  cmd->add_option("--plugin", args->plugins, "Load backends from a shared library");
  cmd->add_option("--rtol", args->rtol,
                  "Relative tolerance: |compiled - eager| <= atol + rtol |eager| (default: by the outputs' dtype: "
                  "float32 1e-4, float32 through TF32 2e-3, float16 1e-2, bfloat16 2e-2; integers exact)");
  cmd->add_option("--atol", args->atol,
                  "Absolute tolerance (default: by dtype: float32 1e-5, TF32 2e-3, float16 1e-3, bfloat16 1e-2)");
  cmd->add_option("--seed", args->seed, "Seed of the random inputs (0: a fresh one, printed)")->capture_default_str();
  cmd->add_flag("--json", args->json, "Print JSON");
  // Bad input is exit status 2 here (1 means a mismatch), so the command reports its own errors.
  return [args]() -> int {
    try {
      return run(*args);
    } catch (const Error& e) {
      std::cerr << "kiln: error: " << e.what() << "\n";
      return 2;
    }
  };
}

}  // namespace kiln::cli
