// GPU tests (label "gpu"): max_pool2d windows as pointwise kernels of their taps (lowering::LowerOptions::pool_windows,
// auto's choice on the GPU) against LibTorch eager on the same device: every padding, stride and dilation case in
// float32 and bfloat16 in every mode (a max is exact: the same values), and ResNet's stem (a channels-last window
// kernel with its batch norm and ReLU inside) in ResNet-18's miniature. Without a GPU each test skips and says why.
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

// The kernels of every region entry of rt, by name.
std::string kernel_names(const runtime::CapturedRuntime& rt) {
  std::string names;
  for (const auto& r : rt.regions())
    for (const auto& a : rt.artifacts(r.index))
      for (const auto& k : a.kernels) names += k.name + " ";
  return names;
}

}  // namespace

TEST(GpuPoolWindows, EveryWindowGivesEagersValuesInEveryModeAndDtype) {
  REQUIRE_GPU();
  const std::string path = test::pool_cases_model();
  auto m = model::load_model(path, "cuda");
  for (const char* spec : {"2x4x13x11", "3x8x9x20:bfloat16"})
    for (const char* mode : {"default", "reduce-overhead", "max-autotune"}) {
      SCOPED_TRACE(std::string(mode) + " " + spec);
      capture::CompileOptions o;
      o.backend = "kiln";
      o.mode = mode;
      runtime::CapturedRuntime rt(m, o);
      for (int rep = 0; rep < 3; ++rep) {  // fresh inputs each call; graph replays after the first
        const auto [out, ref] = test::call_against_eager(rt, m, spec);
        ASSERT_EQ(out.sizes(), ref.sizes());
        EXPECT_TRUE(out.equal(ref));
      }
      const std::string names = kernel_names(rt);
      // Four windows of taps; the 9x9 (81 taps) stays a reduction.
      EXPECT_EQ(names.find("row_max_pool2d"), names.rfind("row_max_pool2d")) << names;
      EXPECT_NE(names.find("row_max_pool2d"), std::string::npos) << names;
    }
}

TEST(GpuPoolWindows, ResNetsStemMatchesEagerAsAWindowKernel) {
  REQUIRE_GPU();
  auto& ctx = at::globalContext();
  const bool tf32 = ctx.allowTF32CuDNN();
  ctx.setAllowTF32CuDNN(false);  // eager's convolutions in full float32, as Kiln's externs then run
  auto m = model::load_model(test::data("corpus/resnet18.pt"), "cuda");
  for (const char* windows : {"auto", "off"})
    for (const char* mode : {"default", "reduce-overhead"}) {
      SCOPED_TRACE(std::string(mode) + " pool windows " + windows);
      capture::CompileOptions o;
      o.backend = "kiln";
      o.mode = mode;
      o.pool_windows = windows;
      runtime::CapturedRuntime rt(m, o);
      for (int rep = 0; rep < 3; ++rep) {
        const auto [out, ref] = test::call_against_eager(rt, m, "2x3x32x32");
        // float32 convolutions in another memory order and algorithm through eight blocks: 1e-4 of the largest value.
        EXPECT_LE(test::rel_error(out, ref), 1e-4);
      }
      const std::string names = kernel_names(rt);
      EXPECT_EQ(names.find("row_max_pool2d") == std::string::npos, std::string(windows) == "auto") << names;
    }
  ctx.setAllowTF32CuDNN(tf32);
}
