// GPU tests (label "gpu"): depthwise convolutions as generated kernels (lowering::LowerOptions::depthwise, auto's
// choice on the GPU) against LibTorch eager (cuDNN's convolutions) on the same
// device, in float32 and bfloat16, alone and between channels-last convolutions (EfficientNet in miniature).
// Without a GPU each test skips and says why.
#include <gtest/gtest.h>

#include <ATen/Context.h>

#include "engine/model/model_impl.h"
#include "engine/runtime/captured_runtime.h"
#include "engine/runtime/example_inputs.h"
#include "tests/support/gpu_checks.h"
#include "tests/support/paths.h"
#include "tests/support/scripted_models.h"

using namespace kiln;

namespace {

using test::rel_error;

void expect_matches_eager(const std::string& path, const char* spec, double tol, const std::string& what) {
  auto m = model::load_model(path, "cuda");
  for (const char* mode : {"default", "reduce-overhead", "max-autotune"}) {
    capture::CompileOptions o;
    o.backend = "kiln";
    o.mode = mode;
    o.depthwise = "generated";  // as "auto" does on the GPU
    runtime::CapturedRuntime rt(m, o);
    for (int rep = 0; rep < 3; ++rep) {  // fresh inputs each call; graph replays after the first
      auto x = runtime::make_inputs({parse_input_spec(spec)})[0].to(torch::kCUDA);
      auto out = rt.run({x})[0].toTensor().clone();
      torch::NoGradGuard g;
      auto ref = runtime::eager_call(const_cast<torch::jit::Module&>(m.impl->module), {x}).toTensor();
      EXPECT_LE(rel_error(out, ref), tol) << what << " " << mode << " " << spec;
    }
    for (const auto& r : rt.regions())
      for (const auto& a : rt.artifacts(r.index)) EXPECT_TRUE(a.fallbacks.empty()) << what << ": " << a.fallbacks.front();
  }
}

// The convolutions a compile of the model in `mode` leaves to LibTorch (extern calls), with depthwise ones generated
// or not.
int conv_externs(const std::string& path, const char* spec, const std::string& depthwise,
                 const std::string& mode = "default") {
  auto m = model::load_model(path, "cuda");
  capture::CompileOptions o;
  o.backend = "kiln";
  o.depthwise = depthwise;
  o.mode = mode;
  runtime::CapturedRuntime rt(m, o);
  rt.run({runtime::make_inputs({parse_input_spec(spec)})[0].to(torch::kCUDA)});
  int n = 0;
  for (const auto& r : rt.regions())
    for (const auto& a : rt.artifacts(r.index))
      for (const auto& e : a.externs) n += e.find("conv2d") != std::string::npos;
  return n;
}

}  // namespace

TEST(GpuDepthwise, EveryWindowMatchesEagerInFloat32AndBfloat16) {
  REQUIRE_GPU();
  auto& ctx = at::globalContext();
  const bool tf32 = ctx.allowTF32CuDNN();
  ctx.setAllowTF32CuDNN(false);  // eager's convolutions in full float32: the bound checks Kiln's sums
  // float32: sums of at most 49 products in another order, 1e-4 of the largest value. bfloat16: eager rounds each
  // convolution's result to bfloat16 and Kiln keeps float32 inside a kernel, through six convolutions: 3e-2.
  const std::string f32 = test::depthwise_cases_model("dw_f32");
  EXPECT_EQ(conv_externs(f32, "2x8x13x11", "auto"), 0);  // all six generated
  EXPECT_EQ(conv_externs(f32, "2x8x13x11", "extern"), 6);
  EXPECT_EQ(conv_externs(f32, "2x8x13x11", "auto", "reduce-overhead"), 0);  // the CUDA-graph modes too
  expect_matches_eager(f32, "2x8x13x11", 1e-4, "float32");
  expect_matches_eager(test::depthwise_cases_model("dw_f32b"), "3x8x32x20", 1e-4, "float32");
  expect_matches_eager(test::depthwise_cases_model("dw_bf16", at::kBFloat16), "2x8x13x11:bfloat16", 3e-2, "bfloat16");
  ctx.setAllowTF32CuDNN(tf32);
}

TEST(GpuDepthwise, EfficientNetMiniatureMatchesEagerInEveryMode) {
  REQUIRE_GPU();
  auto& ctx = at::globalContext();
  const bool tf32 = ctx.allowTF32CuDNN();
  ctx.setAllowTF32CuDNN(false);
  const std::string path = test::data("corpus/efficientnet_b0.pt");
  EXPECT_LT(conv_externs(path, "3x3x64x64", "auto"), conv_externs(path, "3x3x64x64", "extern"));
  // Channels-last windows 32, 16, 8, 4 and 2 wide (4 and 2 outputs per thread), then 56, 28, 14, 7 and 4 (a whole
  // 7-wide row per thread).
  expect_matches_eager(path, "3x3x64x64", 1e-4, "efficientnet_b0");
  expect_matches_eager(path, "2x3x112x112", 1e-4, "efficientnet_b0");
  ctx.setAllowTF32CuDNN(tf32);
}
