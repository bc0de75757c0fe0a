// Host cost of a Kiln default-mode call, for a profiler to look at: loads MODEL, compiles it once (kiln backend,
// default mode) and makes ITERS steady calls on inputs of the given shapes, printing the per-call median of
// Kiln and of LibTorch eager (no-grad). On the CPU with small inputs the calls are host-bound, so
// `perf record kiln_host_bench ...` shows where Kiln's own per-call work goes (buffers, bindings, launches).
//
//   kiln_host_bench MODEL SHAPE[,SHAPE...] [ITERS=5000] [DEVICE=cpu] [SIDES=both|kiln|eager]
//
// SIDES=kiln leaves eager out, so that a profile holds Kiln's calls only. KILN_BENCH_DEPTHWISE=generated|extern
// picks how depthwise convolutions run (an A/B).
#include <torch/script.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "bench/host_timing.h"
#include "engine/backends/builtin.h"
#include "engine/model/model_impl.h"
#include "engine/runtime/captured_runtime.h"
#include "engine/runtime/example_inputs.h"

using namespace kiln;
int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: kiln_host_bench MODEL SHAPE[,SHAPE...] [ITERS] [DEVICE]\n");
    return 2;
  }
  try {
    backends::register_builtin_backends();
    const int iters = argc > 3 ? std::max(1, std::atoi(argv[3])) : 5000;
    const std::string device = argc > 4 ? argv[4] : "cpu";
    const std::string sides = argc > 5 ? argv[5] : "both";
    std::vector<InputSpec> specs;
    std::stringstream shapes(argv[2]);
    for (std::string s; std::getline(shapes, s, ',');) specs.push_back(parse_input_spec(s));
    auto m = model::load_model(argv[1], device);
    auto x = runtime::make_inputs(specs);
    if (device != "cpu")
      for (auto& t : x) t = t.to(torch::Device(device));
    std::vector<c10::IValue> args(x.begin(), x.end());
    torch::NoGradGuard no_grad;
    auto& module = const_cast<torch::jit::Module&>(m.impl->module);
    capture::CompileOptions o;
    o.backend = "kiln";
    o.mode = "default";
    if (const char* d = std::getenv("KILN_BENCH_DEPTHWISE")) o.depthwise = d;  // auto, generated, extern: an A/B
    runtime::CapturedRuntime rt(m, o);
    std::ostringstream printed;
    auto kiln_call = [&] {
      rt.run(x, &printed);
      printed.str("");
    };
    kiln_call();
    auto median_us = [&](const std::function<void()>& fn) { return 1000 * bench::median_call_ms(fn, iters, 20); };
    const double eager = sides == "kiln" ? 0 : median_us([&] { module.forward(args); });
    const double kiln = sides == "eager" ? 0 : median_us(kiln_call);
    std::printf("%s: eager %.1f us, Kiln default %.1f us per call (median of %d)\n", argv[1], eager, kiln, iters);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kiln_host_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
