// cuDNN called directly for a region's convolutions (runtime/cuda/cudnn_conv.h): the results of ATen's
// convolution for every layout, dtype and group count it takes, and ATen's own call wherever it refuses.
#include <gtest/gtest.h>

#include <ATen/Context.h>

#include <cmath>

#include "engine/model/model_impl.h"
#include "engine/runtime/captured_runtime.h"
#include "engine/runtime/example_inputs.h"
#include "tests/support/gpu.h"
#include "tests/support/paths.h"
#if KILN_WITH_CUDA
#include "engine/runtime/cuda/cudnn_conv.h"
#endif

using namespace kiln;

#if KILN_WITH_CUDA
namespace {

#define REQUIRE_GPU()                                          \
  do {                                                         \
    auto why = test::why_no_gpu();                             \
    if (!why.empty()) GTEST_SKIP() << "no GPU here: " << why;  \
  } while (0)

double rel_error(const at::Tensor& a, const at::Tensor& b) {
  auto x = a.to(at::kDouble).cpu(), y = b.to(at::kDouble).cpu();
  double e = (x - y).abs().max().item<double>() / std::max(y.abs().max().item<double>(), 1e-12);
  return std::isnan(e) ? INFINITY : e;
}

struct Conv {
  std::vector<int64_t> x, w, stride, padding, dilation;
  int64_t groups;
};

}  // namespace

TEST(CudnnConv, EqualsAtenForLayoutsDtypesAndGroups) {
  REQUIRE_GPU();
  auto& ctx = at::globalContext();
  const bool tf32 = ctx.allowTF32CuDNN();
  const std::vector<Conv> convs = {{{2, 16, 20, 20}, {32, 16, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1},
                                   {{1, 3, 33, 31}, {8, 3, 7, 7}, {2, 2}, {3, 3}, {1, 1}, 1},
                                   {{2, 16, 12, 12}, {16, 8, 3, 3}, {1, 2}, {0, 1}, {2, 1}, 2},
                                   {{4, 24, 9, 9}, {48, 24, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 1},
                                   {{2, 16, 10, 10}, {16, 1, 5, 5}, {2, 2}, {2, 2}, {1, 1}, 16}};  // depthwise
  // Tolerances: full float32 1e-5 (algorithms differ in summation order only); TF32 and half types their
  // mantissas' rounding over a few hundred products.
  struct Type {
    at::ScalarType dtype;
    bool tf32;
    double tol;
  };
  for (const Type& t : {Type{at::kFloat, false, 1e-5}, Type{at::kFloat, true, 5e-3}, Type{at::kHalf, false, 5e-3},
                        Type{at::kBFloat16, false, 3e-2}}) {
    ctx.setAllowTF32CuDNN(t.tf32);
    for (const auto& c : convs)
      for (bool channels_last : {false, true}) {
        auto opts = at::TensorOptions().device(at::kCUDA).dtype(t.dtype);
        at::Tensor x = at::randn(c.x, opts), w = at::randn(c.w, opts);
        if (channels_last) x = x.contiguous(at::MemoryFormat::ChannelsLast);
        cuda::CudnnConv conv;
        const uint64_t before = cuda::direct_cudnn_calls();
        for (int rep = 0; rep < 2; ++rep) {  // set up, then from the plan
          at::Tensor y = conv.run(x, w, c.stride, c.padding, c.dilation, c.groups);
          at::Tensor ref = at::convolution(x, w, {}, c.stride, c.padding, c.dilation, false, {0, 0}, c.groups);
          const bool row_major_depthwise = c.groups == c.x[1] && !channels_last;
          std::string what = std::string(c10::toString(t.dtype)) + (t.tf32 ? " tf32" : "") +
                             (channels_last ? " channels-last" : " row-major") + " groups " + std::to_string(c.groups);
          if (row_major_depthwise) {
            EXPECT_FALSE(y.defined()) << what;
            EXPECT_NE(conv.refusal().find("depthwise"), std::string::npos) << conv.refusal();
            continue;
          }
          ASSERT_TRUE(y.defined()) << what << ": " << conv.refusal();
          EXPECT_EQ(y.sizes(), ref.sizes()) << what;
          EXPECT_EQ(y.is_contiguous(at::MemoryFormat::ChannelsLast) && !y.is_contiguous(), channels_last) << what;
          EXPECT_LE(rel_error(y, ref), t.tol) << what;
        }
        const bool ran = !(c.groups == c.x[1] && !channels_last);
        EXPECT_EQ(cuda::direct_cudnn_calls() - before, ran ? 2u : 0u);
      }
  }
  ctx.setAllowTF32CuDNN(tf32);
}

TEST(CudnnConv, LeavesToAtenWhatAtenWouldNotCallThisWay) {
  REQUIRE_GPU();
  auto opts = at::TensorOptions().device(at::kCUDA);
  cuda::CudnnConv conv;
  at::Tensor x = at::randn({2, 8, 10, 10}, opts), w = at::randn({8, 8, 3, 3}, opts);
  // A view that is neither row-major nor channels-last.
  EXPECT_FALSE(conv.run(x.transpose(2, 3), w, {1, 1}, {1, 1}, {1, 1}, 1).defined());
  EXPECT_FALSE(conv.refusal().empty());
  // Double precision, CPU tensors, mismatched groups.
  EXPECT_FALSE(conv.run(x.to(at::kDouble), w.to(at::kDouble), {1, 1}, {1, 1}, {1, 1}, 1).defined());
  EXPECT_FALSE(conv.run(x.cpu(), w.cpu(), {1, 1}, {1, 1}, {1, 1}, 1).defined());
  EXPECT_FALSE(conv.run(x, w, {1, 1}, {1, 1}, {1, 1}, 3).defined());
  // Deterministic or benchmark mode: ATen's own algorithm search or filter decides.
  auto& ctx = at::globalContext();
  const bool bench = ctx.benchmarkCuDNN();
  ctx.setBenchmarkCuDNN(true);
  EXPECT_FALSE(conv.run(x, w, {1, 1}, {1, 1}, {1, 1}, 1).defined());
  ctx.setBenchmarkCuDNN(bench);
  at::Tensor y = conv.run(x, w, {1, 1}, {1, 1}, {1, 1}, 1);
  ASSERT_TRUE(y.defined()) << conv.refusal();
  EXPECT_TRUE(conv.refusal().empty());
}

// A convolutional network in default mode calls cuDNN itself, and its results stay eager's.
TEST(CudnnConv, ADefaultModeRegionCallsItAndMatchesEager) {
  REQUIRE_GPU();
  auto& ctx = at::globalContext();
  const bool tf32 = ctx.allowTF32CuDNN();
  ctx.setAllowTF32CuDNN(false);
  auto m = model::load_model(test::example("tiny_resnet.pt"), "cuda");
  capture::CompileOptions o;
  o.backend = "kiln";
  o.mode = "default";
  runtime::CapturedRuntime rt(m, o);
  for (int rep = 0; rep < 3; ++rep) {
    auto x = runtime::make_inputs({parse_input_spec("2x3x16x16")})[0].to(at::kCUDA);
    const uint64_t before = cuda::direct_cudnn_calls();
    auto out = rt.run({x})[0].toTensor();
    if (rep > 0) EXPECT_GT(cuda::direct_cudnn_calls(), before) << "no convolution went to cuDNN directly";
    torch::NoGradGuard g;
    auto ref = const_cast<torch::jit::Module&>(m.impl->module).forward({x}).toTensor();
    EXPECT_LE(rel_error(out, ref), 1e-4);
  }
  ctx.setAllowTF32CuDNN(tf32);
}

#endif
