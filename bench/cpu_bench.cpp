// CPU benchmark: steady-state latency of LibTorch eager, LibTorch's TorchScript optimizing
// executor (torch::jit::optimize_for_inference on the frozen module) and Kiln's kiln backend on
// every example model, side by side in one run, plus Kiln's compile time cold (empty kernel
// cache) and warm (disk cache hit). Prints a table of ratios. Not a test: nothing asserts speed.
#include <torch/csrc/jit/runtime/print_handler.h>
#include <ATen/Parallel.h>
#include <torch/script.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <sstream>
#include <vector>

#include "bench/host_timing.h"
#include "engine/backends/builtin.h"
#include "engine/base/output_file.h"
#include "engine/codegen/cpp/cpp_compiler.h"
#include "engine/model/model_impl.h"
#include "engine/runtime/captured_runtime.h"
#include "engine/runtime/example_inputs.h"

using namespace kiln;
using Clock = std::chrono::steady_clock;

int main(int argc, char** argv) {
  kiln::backends::register_builtin_backends();
  std::string examples = argc > 1 ? argv[1] : "resources/examples";
  int iters = argc > 2 ? std::atoi(argv[2]) : 200;
  torch::jit::setPrintHandler([](const std::string&) {});
  struct Case {
    const char* model;
    const char* input;
  };
  std::vector<Case> cases = {{"small_mlp.pt", "64x64"},        {"small_mlp_traced.pt", "64x64"},
                             {"gate.pt", "64x64"},             {"breaky.pt", "64x64"},
                             {"block.pt", "8x64x64"},          {"tiny_resnet.pt", "8x3x32x32"},
                             {"shape_branch.pt", "64x16"}};
  std::string cache = (std::filesystem::temp_directory_path() / ("kiln-bench-cache-" + std::to_string(::getpid()))).string();
  ::setenv("KILN_CACHE_DIR", cache.c_str(), 1);
  std::printf("Kiln CPU benchmark: median of %d iterations after warm-up, threads=%d\n", iters, at::get_num_threads());
  std::printf("%-20s %-11s %9s %9s %9s %10s %10s %11s %11s\n", "model", "input", "eager ms", "ts-jit ms", "kiln ms",
              "kiln/eager", "kiln/jit", "cold cmp ms", "warm cmp ms");
  for (const auto& c : cases) {
    auto m = model::load_model(examples + "/" + c.model);
    auto x = runtime::make_inputs({parse_input_spec(c.input)});
    std::vector<c10::IValue> args(x.begin(), x.end());
    torch::NoGradGuard g;
    auto& module = const_cast<torch::jit::Module&>(m.impl->module);
    double eager = bench::median_call_ms([&] { module.forward(args); }, iters);
    // optimize_for_inference rewrites the module in place: give it its own copy of the model.
    auto peer = model::load_model(examples + "/" + c.model);
    auto optimized = torch::jit::optimize_for_inference(const_cast<torch::jit::Module&>(peer.impl->frozen));
    double jit = bench::median_call_ms([&] { optimized.forward(args); }, iters);
    capture::CompileOptions o;
    o.backend = "kiln";
    auto t0 = Clock::now();
    runtime::CapturedRuntime cold(m, o);
    std::ostringstream printed;  // the models' print() output stays out of the table
    cold.run(x, &printed);
    double cold_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    auto t1 = Clock::now();
    runtime::CapturedRuntime warm(m, o);
    warm.run(x, &printed);
    double warm_ms = std::chrono::duration<double, std::milli>(Clock::now() - t1).count();
    double kiln = bench::median_call_ms([&] { warm.run(x, &printed); printed.str(""); }, iters);
    std::printf("%-20s %-11s %9.4f %9.4f %9.4f %10.2f %10.2f %11.1f %11.1f\n", c.model, c.input, eager, jit, kiln,
                kiln / eager, kiln / jit, cold_ms, warm_ms);
  }
  auto stats = codegen::cpp_compiler_stats();
  std::printf("C++ compiler invocations %d, cache hits %d (cold = first compile into an empty cache, warm = a new "
              "runtime hitting the disk cache)\n",
              stats.invocations, stats.cache_hits);
  kiln::remove_tree(cache);  // not std::filesystem::remove_all: engine/base/output_file.h
  return 0;
}
