// kiln compile MODEL.pt --input 8x64 [--backend kiln|eager|aot_eager] [--mode default] [--conv-layout L] [--linear-bias W]
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
  ModelArgs model;
  PrecisionArgs precision;
  BackendArgs backend;
  std::string dump;
  std::string device;  // set by add_device_option
  std::string conv_layout = "auto";
  std::string linear_bias = "auto";
  std::string conv_weights = "auto";
  std::string row_stages = "auto";
  std::string split_reductions = "auto";
  std::string pool_windows = "auto";
  std::string products = "auto";
  std::string attention = "auto";
  std::string depthwise = "auto";
  std::string cuda_arch;  // --cuda-arch: build the CUDA kernels only
  int checks = 3;
  bool json = false;
};

int run(const CompileArgs& a) {
  a.precision.apply();
  auto specs = a.model.specs();
  check_count("--checks", a.checks, kMaxChecks, " calls (each compares every output with eager)");
  api::CompileOptions o;
  a.backend.apply(o);
  api::check_conv_layout(a.conv_layout);
  o.conv_layout = a.conv_layout;
  api::check_linear_bias(a.linear_bias);
  o.linear_bias = a.linear_bias;
  api::check_conv_weights(a.conv_weights);
  o.conv_weights = a.conv_weights;
  api::check_row_stages(a.row_stages);
  o.row_stages = a.row_stages;
  api::check_split_reductions(a.split_reductions);
  o.split_reductions = a.split_reductions;
  api::check_pool_windows(a.pool_windows);
  o.pool_windows = a.pool_windows;
  api::check_products(a.products);
  o.products = a.products;
  api::check_attention(a.attention);
  api::check_depthwise(a.depthwise);
  o.attention = a.attention;
  o.depthwise = a.depthwise;
  if (!a.cuda_arch.empty()) {
    api::check_cuda_arch(a.cuda_arch);
    if (o.backend != "kiln") throw Error("--cuda-arch builds Kiln's CUDA kernels: it needs --backend kiln");
    if (a.device != "cpu") throw Error("--cuda-arch builds the kernels where no GPU runs them: it needs --device cpu");
    o.cuda_build_arch = a.cuda_arch;
  }
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
  auto r = api::compile(a.model.path, specs, o, dump, a.checks, a.device);
  if (tty && *shown) std::cerr << "\n";
  std::cout << (a.json ? api::compile_json(r) + "\n" : api::compile_text(r));
  if (!a.json && !dump.empty()) std::cout << "stage dumps written under " << dump << "\n";
  return r.within_tolerance ? 0 : kExitOutputsDiffer;
}

}  // namespace

Command add_compile(CLI::App& app) {
  auto [cmd, args, command] = subcommand<CompileArgs>(app, "compile", kCompileDescription);
  add_model_options(cmd, args.model);
  add_precision_option(cmd, args.precision);
  add_backend_options(cmd, args.backend, kDynamicDefault);
  add_device_option(cmd, args.device, DeviceDefault::Cpu);
  cmd.add_option("--conv-layout", args.conv_layout,
                 "Storage of convolution chains: auto (channels-last on cuda), channels-last or contiguous")
      ->capture_default_str();
  cmd.add_option("--conv-weights", args.conv_weights,
                 "Constant weights of channels-last convolutions: auto (per-call in default mode on cuda, kept in "
                 "max-autotune, otherwise kept while the copies are no larger than the activations eager would hold), kept (converted once and held: more memory) or per-call (converted "
                 "by each call: more device time)")
      ->capture_default_str();
  cmd.add_option("--linear-bias", args.linear_bias,
                 "Where a linear's bias is added: auto (by the pointwise work reading the product, on cuda "
                 "except max-autotune, which times both), epilogue (in the GEMM call) or readers")
      ->capture_default_str();
  cmd.add_option("--row-stages", args.row_stages,
                 "Whether a row kernel (softmax, layer_norm) takes in the pointwise kernel before it and the "
                 "epilogues folding its rows, from 256 rows on: auto, or separate (each its own kernel)")
      ->capture_default_str();
  cmd.add_option("--split-reductions", args.split_reductions,
                 "Whether a reduction over few long channels-last rows (a pooling of 256 channels of 112x112) sums "
                 "parts of each row first, so that it fills the GPU: auto (on cuda), on (the cpu too) or off")
      ->capture_default_str();
  add_pool_windows_option(cmd, args.pool_windows);
  add_products_option(cmd, args.products);
  add_attention_option(cmd, args.attention);
  add_depthwise_option(cmd, args.depthwise);
  cmd.add_option("--cuda-arch", args.cuda_arch,
                 "Build each region's CUDA kernels for this architecture (sm_90) as the GPU's mode would, without a "
                 "GPU: NVRTC compiles them, nothing runs them (the model runs eagerly on the cpu); see the kernels, "
                 "the compiler's runs and --dump's stages");
  cmd.add_option("--dump", args.dump,
                 "Write every stage (captured graph, loop IR, fusion, source) under DIR "
                 "(also KILN_DUMP_DIR)");
  cmd.add_option("--checks", args.checks, "Calls checked against eager (fresh random inputs each)")
      ->capture_default_str();
  add_json_flag(cmd, args.json);
  return command(run);
}

}  // namespace kiln::cli
