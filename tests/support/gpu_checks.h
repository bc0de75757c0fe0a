// What the GPU tests share: skipping visibly without a device, and the error measures their checks use.
#pragma once

#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "engine/model/model_impl.h"
#include "engine/runtime/captured_runtime.h"
#include "engine/runtime/example_inputs.h"
#include "tests/support/gpu.h"

// Skips the test, saying why, where the GPU tests cannot run (tests/support/gpu.h).
#define REQUIRE_GPU()                                                                 \
  do {                                                                                \
    auto why_no_gpu_here = ::kiln::test::why_no_gpu();                                \
    if (!why_no_gpu_here.empty()) GTEST_SKIP() << "no GPU here: " << why_no_gpu_here; \
  } while (0)

namespace kiln::test {

// max |a - b| over max |b|, in double; infinite when a holds a NaN.
inline double rel_error(const at::Tensor& a, const at::Tensor& b) {
  auto x = a.to(at::kDouble).cpu(), y = b.to(at::kDouble).cpu();
  double e = (x - y).abs().max().item<double>() / std::max(y.abs().max().item<double>(), 1e-12);
  return std::isnan(e) ? INFINITY : e;
}

// One call of rt on fresh random inputs of `spec` on the GPU, and eager's result of the same inputs under no-grad:
// {compiled (cloned: a graph's next replay writes over its output), eager}.
inline std::pair<at::Tensor, at::Tensor> call_against_eager(runtime::CapturedRuntime& rt, const model::Model& m,
                                                            const std::string& spec) {
  auto x = runtime::make_inputs({parse_input_spec(spec)})[0].to(at::kCUDA);
  auto out = rt.run({x})[0].toTensor().clone();
  at::NoGradGuard g;
  auto ref = runtime::eager_call(const_cast<torch::jit::Module&>(m.impl->module), {x}).toTensor();
  return {out, ref};
}

// The bound on a 16-bit result's distance from `exact` (the float32 result of the same inputs): eager rounds
// every intermediate to 16 bits while Kiln's fused kernels may keep float32 inside, so the two differ by a
// few spacings while both are right. The yardstick is eager's own distance `eager_err`: at most twice it, plus
// one spacing of the dtype (2^-8 bfloat16, 2^-11 float16). A wrong kernel is off by far more.
inline double sixteen_bit_bound(double eager_err, at::ScalarType dtype) {
  return 2 * eager_err + (dtype == at::kBFloat16 ? 1.0 / 256 : 1.0 / 2048);
}

}  // namespace kiln::test
