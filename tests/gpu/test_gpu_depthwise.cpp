// GPU tests (label "gpu"): depthwise convolutions as generated kernels (lowering::LowerOptions::depthwise, auto's
// choice on the GPU) against LibTorch eager (cuDNN's convolutions) on the same
// device, in float32 and bfloat16, alone and between channels-last convolutions (EfficientNet in miniature).
// Without a GPU each test skips and says why.
#include <gtest/gtest.h>
#include "kiln_build_config.h"

#include <functional>
#include <map>

#include <ATen/Context.h>

#include "engine/model/model_impl.h"
#include "engine/runtime/captured_runtime.h"
#include "engine/runtime/example_inputs.h"
#if KILN_WITH_CUDA
#include "engine/runtime/cuda/gpu_kernels.h"
#endif
#include "tests/support/gpu_checks.h"
#include "tests/support/paths.h"
#include "tests/support/scripted_models.h"

using namespace kiln;

namespace {

using test::rel_error;

void expect_matches_eager(const std::string& path, const char* spec, double tol, const std::string& what,
                          const std::function<void(model::Model&)>& prepare = {}) {
  auto m = model::load_model(path, "cuda");
  if (prepare) prepare(m);
  for (const char* mode : {"default", "reduce-overhead", "max-autotune"}) {
    capture::CompileOptions o;
    o.backend = "kiln";
    o.mode = mode;
    o.depthwise = "generated";  // as "auto" does on the GPU
    runtime::CapturedRuntime rt(m, o);
    for (int rep = 0; rep < 3; ++rep) {  // fresh inputs each call; graph replays after the first
      const auto [out, ref] = test::call_against_eager(rt, m, spec);
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
  // Channels-last windows 32, 16, 8, 4 and 2 wide, then 56, 28, 14, 7 and 4 (a whole 7-wide row per thread), each
  // thread taking 4 channels as float4s and 4, 2 or 1 outputs along the width (2 or 1 where the window strides).
  expect_matches_eager(path, "3x3x64x64", 1e-4, "efficientnet_b0");
  expect_matches_eager(path, "2x3x112x112", 1e-4, "efficientnet_b0");
  ctx.setAllowTF32CuDNN(tf32);
}

// ConvNeXt: blocks with no convolution extern, their depthwise 7x7 convolutions read by their layer norms through
// permute(0, 2, 3, 1), stored channels-last through those permutes (lowering/channels_last.cpp) and kept as windows'
// kernels of their own with the permute read through (fusion/schedule.cpp): the blocks in miniature (16 channels,
// 8x8 and 16x16 maps) and the corpus's ConvNeXt-T miniature, against eager in every mode. Float32: 49-tap sums and
// products over 16-64 features in another order, 1e-4 of the largest value.
TEST(GpuDepthwise, ConvNextBlocksMatchEagerInEveryMode) {
  REQUIRE_GPU();
  auto& ctx = at::globalContext();
  const bool tf32 = ctx.allowTF32CuDNN();
  ctx.setAllowTF32CuDNN(false);
  const std::string blocks = test::convnext_blocks_model();
  expect_matches_eager(blocks, "2x3x32x32", 1e-4, "convnext blocks");
  expect_matches_eager(blocks, "3x3x64x64", 1e-4, "convnext blocks");
  expect_matches_eager(test::data("corpus/convnext_tiny.pt"), "2x3x64x64", 1e-4, "convnext_tiny");
  ctx.setAllowTF32CuDNN(tf32);
}

// Every form max-autotune races for a window's kernel, each forced in turn whatever the timings (one output per
// thread; the kernel's own outputs along the width without its 2 along the height; 4 and the width's largest divisor
// up to 8 along the width with its height; 4 channels per thread as float4s), and the kernels' own forms in the
// other modes: results match eager's in every form, on the ConvNeXt blocks
// (7x7 windows 32 and 20 wide: 5 is 20's largest divisor up to 8, the one case of _r5h2), the ConvNeXt-T
// miniature (28 and 14 wide), the six-case window model (strided, dilated, padded; row-major, so its kernels are
// not windows' kernels and keep their one form whatever is forced), and the ResNet-18 miniature's stem pooling (8 wide: 4 along the width by default,
// 4x2 and 8 among the candidates), float32 to 1e-4, bfloat16 to 3e-2.
TEST(GpuDepthwise, EveryFormOfAWindowsKernelMatchesEager) {
  REQUIRE_GPU();
#if KILN_WITH_CUDA
  auto& ctx = at::globalContext();
  const bool tf32 = ctx.allowTF32CuDNN();
  ctx.setAllowTF32CuDNN(false);
  struct Case {
    std::string path, spec;
    double tol;
  };
  const std::vector<Case> cases = {{test::convnext_blocks_model(), "2x3x128x128", 1e-4},
                                   {test::convnext_blocks_model(), "2x3x80x80", 1e-4},
                                   {test::data("corpus/convnext_tiny.pt"), "2x3x112x112", 1e-4},
                                   {test::depthwise_cases_model("dw_forms"), "3x8x32x20", 1e-4},
                                   {test::depthwise_cases_model("dw_forms_bf16", at::kBFloat16), "2x8x32x20:bfloat16", 3e-2},
                                   {test::data("corpus/resnet18.pt"), "2x3x32x32", 1e-4}};
  std::map<std::string, int> chosen;  // form suffix -> kernels that ran it
  const std::vector<std::string> suffixes = {"_w1",   "_r4h1", "_r7h1", "_r8h1", "_r5h2",
                                             "_r4h2", "_r7h2", "_c4",   "_c4r2", "_c4r1"};
  for (const std::string& suffix : suffixes) {
    SCOPED_TRACE(suffix);
    runtime::force_kernel_form_for_testing(suffix);
    for (const auto& c : cases) {
      auto m = model::load_model(c.path, "cuda");
      capture::CompileOptions o;
      o.backend = "kiln";
      o.mode = "max-autotune";
      o.depthwise = "generated";
      runtime::CapturedRuntime rt(m, o);
      for (int rep = 0; rep < 2; ++rep) {
        const auto [out, ref] = test::call_against_eager(rt, m, c.spec.c_str());
        EXPECT_LE(rel_error(out, ref), c.tol) << c.path << " " << c.spec;
      }
      // Each kernel that has the form (and could launch it) ran it.
      for (const auto& r : rt.regions())
        for (const auto& a : rt.artifacts(r.index))
          for (const auto& k : a.kernels) {
            bool has = false, ran = false;
            for (const auto& cand : k.autotune) {
              const bool form = cand.config.find(k.name + suffix + ")") != std::string::npos;
              has |= form && cand.ms > 0;
              ran |= form && cand.chosen;
            }
            if (has) EXPECT_TRUE(ran) << k.name << suffix << " in " << c.path;
            chosen[suffix] += ran;
          }
    }
  }
  runtime::force_kernel_form_for_testing("");
  for (const std::string& suffix : suffixes)
    EXPECT_GT(chosen[suffix], 0) << suffix << ": no kernel of these models has that form";
  ctx.setAllowTF32CuDNN(tf32);
#endif
}

TEST(GpuDepthwise, FourChannelsPerThreadRunOnlyOnAlignedBuffers) {
  // max-autotune races forms of a window's kernel that move 4 channels per thread as float4s; they may run only when
  // every buffer of the kernel is 16-byte aligned. Here the batch norm's running mean is a view one float into a
  // larger tensor (4 bytes past an aligned address), which the kernel reads in place: those forms are skipped (their
  // launch would fault) and the result is still eager's; with the module's own mean they are timed.
  REQUIRE_GPU();
  auto& ctx = at::globalContext();
  const bool tf32 = ctx.allowTF32CuDNN();
  ctx.setAllowTF32CuDNN(false);
  torch::jit::Module m("dw_unaligned");
  for (const auto& [p, sizes] : std::vector<std::pair<std::string, std::vector<int64_t>>>{
           {"w0", {8, 8, 1, 1}}, {"w3", {8, 1, 3, 3}}, {"mean", {8}}, {"var", {8}}, {"gamma", {8}}, {"beta", {8}}})
    m.register_parameter(p, torch::randn(sizes), false);
  m.define(R"JIT(
def forward(self, x):
    y = torch.conv2d(x, self.w0, None, [1, 1], [0, 0], [1, 1], 1)
    y = torch.conv2d(y, self.w3, None, [1, 1], [1, 1], [1, 1], 8)
    y = torch.relu(torch.batch_norm(y, self.gamma, self.beta, self.mean, self.var.abs() + 0.5, False, 0.1, 1e-5, True))
    return torch.conv2d(y, self.w0, None, [1, 1], [0, 0], [1, 1], 1)
)JIT");
  const std::string path = test::temp_dir() + "/dw_unaligned.pt";
  m.save(path);
  // Kiln compiles the frozen graph, where the mean is a constant: that constant becomes a copy of it one float into
  // a larger tensor (eager keeps the module's own, the same values).
  auto unaligned_mean = [](model::Model& model) {
    const at::Tensor mean = model.impl->module.attr("mean").toTensor();
    int replaced = 0;
    for (auto* n : model.impl->graph->nodes()) {
      if (n->kind() != c10::prim::Constant || n->output()->type()->kind() != c10::TypeKind::TensorType) continue;
      const at::Tensor t = n->t(c10::attr::value);
      if (t.sizes() != mean.sizes() || !t.equal(mean)) continue;
      auto view = at::empty({mean.numel() + 1}, mean.options()).narrow(0, 1, mean.numel());
      view.copy_(mean);
      ASSERT_NE(reinterpret_cast<uintptr_t>(view.data_ptr()) % 16, 0u);
      n->t_(c10::attr::value, view);
      ++replaced;
    }
    ASSERT_EQ(replaced, 1);
  };
  expect_matches_eager(path, "2x8x16x16", 1e-4, "unaligned running mean", unaligned_mean);
  expect_matches_eager(path, "2x8x16x16", 1e-4, "aligned");
  for (const bool aligned : {false, true}) {
    SCOPED_TRACE(aligned ? "aligned" : "unaligned");
    auto model = model::load_model(path, "cuda");
    if (!aligned) unaligned_mean(model);
    capture::CompileOptions o;
    o.backend = "kiln";
    o.mode = "max-autotune";
    o.depthwise = "generated";
    runtime::CapturedRuntime rt(model, o);
    rt.run({runtime::make_inputs({parse_input_spec("2x8x16x16")})[0].to(torch::kCUDA)});
    int float4_forms = 0, skipped = 0, timed = 0;
    for (const auto& r : rt.regions())
      for (const auto& a : rt.artifacts(r.index))
        for (const auto& k : a.kernels)
          for (const auto& c : k.autotune) {
            if (c.config.find("_c4") == std::string::npos) continue;
            ++float4_forms;
            skipped += c.config.find("skipped, its float4s need every buffer 16-byte aligned") != std::string::npos;
            timed += c.ms > 0;
            if (!aligned) EXPECT_FALSE(c.chosen) << c.config;
          }
    EXPECT_GT(float4_forms, 0);
    EXPECT_EQ(skipped, aligned ? 0 : float4_forms);
    if (aligned) EXPECT_GT(timed, 0);  // every block size its registers allow
    else EXPECT_EQ(timed, 0);
  }
  ctx.setAllowTF32CuDNN(tf32);
}

TEST(GpuDepthwise, ASplitPoolingMatchesEagerInEveryMode) {
  // A squeeze-excitation-like mean and a global max over 2 x 64 channels-last rows of 112 x 112 values run in two
  // steps on the GPU (lowering/split_reduction.h: 56 parts of each row, then the parts): float32 sums of 12544 values
  // in another order than eager's, 1e-5 of the largest value.
  REQUIRE_GPU();
  torch::jit::Module m("split_pools");
  m.register_parameter("w", torch::randn({64, 3, 1, 1}), false);
  m.define(R"JIT(
def forward(self, x):
    y = torch.conv2d(x, self.w, None, [1, 1], [0, 0], [1, 1], 1)
    return torch.adaptive_avg_pool2d(torch.relu(y), [1, 1]) * torch.amax(y, [2, 3], True)
)JIT");
  const std::string path = test::temp_dir() + "/split_pools.pt";
  m.save(path);
  auto& ctx = at::globalContext();
  const bool tf32 = ctx.allowTF32CuDNN();
  ctx.setAllowTF32CuDNN(false);
  expect_matches_eager(path, "2x3x112x112", 1e-5, "split pooling");
  auto model = model::load_model(path, "cuda");
  capture::CompileOptions o;
  o.backend = "kiln";
  runtime::CapturedRuntime rt(model, o);
  rt.run({runtime::make_inputs({parse_input_spec("2x3x112x112")})[0].to(torch::kCUDA)});
  int split = 0;
  for (const auto& s : rt.artifacts(0).at(0).stages)
    if (s.file == "20_loops_before_fusion.txt") split += s.text.find("# split reduction: ") != std::string::npos;
  EXPECT_EQ(split, 1);
  ctx.setAllowTF32CuDNN(tf32);
}
