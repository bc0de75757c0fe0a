// max_pool2d windows as pointwise computations of their taps (lowering/lower_graph.h, LowerOptions::pool_windows):
// the loop IR before and after (golden), which poolings take it, results against LibTorch eager (the same values,
// NaN included), the layout it keeps, and ResNet's stem through the GPU's front end as one window kernel with its
// batch norm and ReLU, its CUDA form taking neighbouring outputs along the width.
#include <gtest/gtest.h>
#include "kiln_build_config.h"

#include <torch/script.h>

#if KILN_WITH_CUDA
#include "engine/codegen/cuda/emit_cuda.h"
#include "engine/codegen/cuda/nvrtc_compiler.h"
#endif
#include "engine/api/options.h"
#include "engine/base/error.h"
#include "engine/fusion/schedule.h"
#include "engine/lowering/channels_last.h"
#include "engine/lowering/lower_graph.h"
#include "engine/model/model_impl.h"
#include "engine/pipeline/front_end.h"
#include "engine/runtime/captured_runtime.h"
#include "engine/runtime/example_inputs.h"
#include "tests/support/compile_support.h"
#include "tests/support/ir_graphs.h"
#include "tests/support/paths.h"
#include "tests/support/scripted_models.h"

using namespace kiln;

namespace {

using Compiled = test::CompiledModel;

// Compiled with the kiln backend on the CPU (static shapes), pool windows on, off or auto's choice, after one call.
Compiled compile(const std::string& path, const std::string& input, const std::string& pool_windows) {
  return test::compile_example(path, input, "kiln", "auto", "auto", "auto", pool_windows);
}

lowering::LoweredRegion lowered(Compiled& c, bool pool_windows) {
  lowering::LowerOptions lo;
  lo.pool_windows = pool_windows;
  return lowering::lower_graph(c.rt->regions().at(0).entries.at(0).graph, lo);
}

int count(const lowering::LoopProgram& p, lowering::Comp::Kind kind, const std::string& target) {
  int n = 0;
  for (const auto& comp : p.comps) n += comp.kind == kind && comp.target == target;
  return n;
}

at::Tensor eager(Compiled& c, const at::Tensor& x) {
  torch::NoGradGuard g;
  return runtime::eager_call(const_cast<torch::jit::Module&>(c.model.impl->module), {x}).toTensor();
}

// The same values as eager's, NaN where eager has NaN (a max is exact: no tolerance).
void expect_same_values(const at::Tensor& out, const at::Tensor& ref, const std::string& what) {
  ASSERT_EQ(out.sizes(), ref.sizes()) << what;
  EXPECT_TRUE(out.isnan().equal(ref.isnan())) << what;
  EXPECT_TRUE(out.nan_to_num(0.0, 0.0, 0.0).equal(ref.nan_to_num(0.0, 0.0, 0.0))) << what;
}

// The first region's graph through the GPU's front end (channels-last, recomputation, depthwise and pool windows,
// conv weights copied per call), wherever the test runs.

}  // namespace

TEST(PoolWindows, BeforeAfterGolden) {
  // ResNet's pooling over a 1x2x5x5 map: a reduction over each 3x3 window before, nine taps after, the taps on the
  // first row and column (which can fall in the padding) clamped and counting -inf there.
  const std::string path = test::scripted_model("pool_golden", R"JIT(
def forward(self, x):
    return torch.max_pool2d(torch.relu(x), [3, 3], [2, 2], [1, 1], [1, 1], False)
)JIT");
  auto c = compile(path, "1x2x5x5", "on");
  const std::string text = "# before\n" + lowering::loop_program_text(lowered(c, false).program) + "\n# after\n" +
                           lowering::loop_program_text(lowered(c, true).program);
  auto diff = test::check_golden("lowering/pool_window.txt", text);
  EXPECT_TRUE(diff.empty()) << diff;
}

TEST(PoolWindows, EveryStridePaddingAndDilationGivesEagersValues) {
  const std::string path = test::pool_cases_model();
  for (const char* input : {"2x4x13x11", "1x3x16x16", "3x2x9x20"}) {
    auto c = compile(path, input, "on");
    auto low = lowered(c, true);
    EXPECT_EQ(count(low.program, lowering::Comp::Kind::Pointwise, "aten::max_pool2d"), 4) << input;
    EXPECT_EQ(count(low.program, lowering::Comp::Kind::Reduction, "aten::max_pool2d"), 1) << input;  // the 9x9
    EXPECT_TRUE(lowering::verify(low.program).empty()) << input;
    for (int trial = 0; trial < 3; ++trial) {
      auto x = runtime::make_inputs({parse_input_spec(input)})[0];
      expect_same_values(c.rt->run({x})[0].toTensor(), eager(c, x), input);
    }
  }
}

TEST(PoolWindows, ANaNInAWindowIsItsMaxAsInEager) {
  auto c = compile(test::pool_cases_model(), "2x4x13x11", "on");
  auto x = runtime::make_inputs({parse_input_spec("2x4x13x11")})[0];
  x.index_put_({0, 1, 6, 5}, std::nan(""));
  x.index_put_({1, 3, 0, 0}, std::nan(""));  // a corner: windows that cross the padding
  x.index_put_({1, 2, 12, 10}, -INFINITY);
  const at::Tensor out = c.rt->run({x})[0].toTensor(), ref = eager(c, x);
  ASSERT_GT(ref.isnan().sum().item<int64_t>(), 0);
  expect_same_values(out, ref, "NaN and -inf inputs");
}

TEST(PoolWindows, OffAndOnTheCpuByDefaultThePoolingIsAReduction) {
  for (const char* choice : {"off", "auto"}) {
    auto c = compile(test::pool_cases_model(), "2x4x13x11", choice);
    const auto& art = c.rt->artifacts(0).at(0);
    std::string names;
    for (const auto& k : art.kernels) names += k.name + " ";
    EXPECT_NE(names.find("row_max_pool2d"), std::string::npos) << choice << ": " << names;
    auto x = runtime::make_inputs({parse_input_spec("2x4x13x11")})[0];
    expect_same_values(c.rt->run({x})[0].toTensor(), eager(c, x), choice);
  }
}

TEST(PoolWindows, KeepsTheChannelsLastLayoutOfItsInput) {
  auto c = compile(test::stem_model(), "2x3x16x16", "on");
  auto low = lowered(c, true);
  lowering::choose_channels_last(low.program);
  int pools = 0;
  for (const auto& comp : low.program.comps)
    if (comp.kind == lowering::Comp::Kind::Pointwise && comp.target == "aten::max_pool2d") {
      EXPECT_EQ(comp.layout, (std::vector<int>{0, 2, 3, 1})) << comp.name;
      ++pools;
    }
  EXPECT_EQ(pools, 1);
}

TEST(PoolWindows, ResNetsStemIsOneWindowKernelWithItsBatchNormAndRelu) {
  // The corpus's ResNet-18 miniature (random weights, batch norms not folded) through the GPU's front end: the stem's
  // batch norm and ReLU go into the pooling's kernel, a pointwise window kernel; on the CPU with pool windows on the
  // model still matches eager (float32 through eight blocks: 1e-4 of the largest value).
  const std::string path = test::data("corpus/resnet18.pt");
  auto c = compile(path, "2x3x32x32", "on");
  EXPECT_LT(test::relative_error(c, "2x3x32x32"), 1e-4);
  auto out = test::gpu_front_end(c);
  const fusion::FusedKernel* pool = nullptr;
  size_t pool_index = 0;
  for (size_t k = 0; k < out.fused.kernels.size(); ++k)
    for (int comp : out.fused.kernels[k].comps)
      if (out.fused.program.comps[comp].target == "aten::max_pool2d") {
        pool = &out.fused.kernels[k];
        pool_index = k;
      }
  ASSERT_NE(pool, nullptr);
  EXPECT_EQ(pool->kind, fusion::FusedKernel::Kind::Pointwise) << pool->name;
  ASSERT_EQ(pool->comps.size(), 1u) << pool->name;
  EXPECT_TRUE(fusion::reads_a_window(out.fused.program.comps[pool->comps[0]].body));
  EXPECT_FALSE(fusion::reads_a_convolution_window(out.fused.program.comps[pool->comps[0]].body));  // no filter's taps
  // The graph nodes in the kernel: the pooling, its batch norm and its ReLU (the stem's convolution is cuDNN's).
  std::string nodes;
  for (const auto& name : pool->nodes) nodes += name + " ";
  EXPECT_EQ(pool->nodes.size(), 3u) << nodes;
#if KILN_WITH_CUDA  // the CUDA code generator is built with the CUDA toolkit only
  // 4 outputs per thread along the 8-wide pooled map (16x16 after the stem, 8x8 pooled), the taps they share loaded
  // once, 1 along the height (a pooling's window: 2 only among max-autotune's candidates), and NVRTC compiles every
  // form.
  std::vector<codegen::CudaKernelInfo> info;
  const std::string src = codegen::emit_cuda(out.fused, {}, &info, true);
  ASSERT_LT(pool_index, info.size());
  EXPECT_EQ(info[pool_index].vector_width, 4) << info[pool_index].name;
  EXPECT_TRUE(info[pool_index].variants.at(0).window_rows) << info[pool_index].name;
  EXPECT_EQ(info[pool_index].variants.at(0).window_height, 1) << info[pool_index].name;
  bool taller = false;
  for (const auto& form : info[pool_index].variants) taller |= form.window_height == 2 && form.vector_width == 8;
  EXPECT_TRUE(taller) << info[pool_index].name << ": max-autotune races 4x2 outputs per thread";
  EXPECT_GT(codegen::compile_cuda(src, "sm_90").cubin.size(), 0u);
#else
  (void)pool_index;
#endif
}

TEST(PoolWindows, ATranscendentalBeforeTheWindowIsStoredOnceArithmeticIsRecomputed) {
  // YOLO's SPPF in miniature: a convolution, SiLU, then a 5x5 stride-1 pooling: the SiLU is stored (an exp at each of
  // the window's taps would be 25 per output), where ResNet's batch norm and ReLU go into the pooling's kernel (above).
  torch::jit::Module m("sppf");
  m.register_parameter("w", torch::randn({8, 4, 1, 1}), false);
  m.define(R"JIT(
def forward(self, x):
    y = torch.conv2d(x, self.w)
    y = y * torch.sigmoid(y)
    return torch.max_pool2d(y, [5, 5], [1, 1], [2, 2], [1, 1], False)
)JIT");
  const std::string path = test::temp_dir() + "/sppf.pt";
  m.save(path);
  auto c = compile(path, "2x4x12x12", "on");
  EXPECT_LT(test::relative_error(c, "2x4x12x12"), 1e-5);
  auto out = test::gpu_front_end(c);
  bool stored = false;
  for (const auto& d : out.fused.decisions)
    stored |= !d.fused && d.reason.find("positions by a window's taps: stored once") != std::string::npos;
  const std::string decisions = fusion::decisions_text(out.fused);
  EXPECT_TRUE(stored) << decisions;
  int pools = 0;
  for (const auto& k : out.fused.kernels)
    for (int comp : k.comps) pools += out.fused.program.comps[comp].target == "aten::max_pool2d";
  EXPECT_EQ(pools, 1);
}

TEST(PoolWindows, AHostilePoolingIsNoWindow) {
  // A graph built by hand (a program's graph is read, not run: its arguments may say anything). Only a pooling as
  // PyTorch would run it, of at most 49 taps, becomes a window; one of more taps stays a reduction; one whose
  // sizes would overflow the index arithmetic, or that PyTorch would refuse, is lowered as LibTorch's call, whose own
  // checks then answer. Nothing throws.
  using test::int_list;
  struct Case {
    const char* what;
    ir::Arg kernel, stride, padding, dilation;
    int windows, reductions, externs;
  };
  const std::vector<Case> cases = {
      {"as PyTorch runs it", int_list({3, 3}), int_list({2, 2}), int_list({1, 1}), int_list({1, 1}), 1, 0, 0},
      {"81 taps", int_list({9, 9}), int_list({1, 1}), int_list({4, 4}), int_list({1, 1}), 0, 1, 0},
      {"taps whose count overflows", int_list({int64_t{1} << 32, int64_t{1} << 32}), int_list({1, 1}), int_list({0, 0}),
       int_list({1, 1}), 0, 0, 1},
      {"a dilation that would overflow", int_list({3, 3}), int_list({1, 1}), int_list({1, 1}),
       int_list({int64_t{1} << 62, 1}), 0, 0, 1},
      {"a padding that would overflow", int_list({3, 3}), int_list({1, 1}), int_list({int64_t{1} << 62, 1}),
       int_list({1, 1}), 0, 0, 1},
      {"a zero stride", int_list({3, 3}), int_list({0, 1}), int_list({1, 1}), int_list({1, 1}), 0, 0, 1},
  };
  for (const auto& c : cases) {
    ir::Graph g;
    ir::Node x;
    x.op = ir::NodeOp::Placeholder;
    x.target = "x";
    x.outputs = {{"x", test::tensor_meta({2, 8, 12, 12})}};
    g.nodes.push_back(x);
    ir::Node pool;
    pool.target = "aten::max_pool2d";
    pool.args = {ir::Arg::value("x"), c.kernel, c.stride, c.padding, c.dilation, ir::Arg::boolean(false)};
    pool.outputs = {{"y", test::tensor_meta({2, 8, 6, 6})}};
    g.nodes.push_back(pool);
    g.nodes.push_back(test::output_node("y"));
    lowering::LowerOptions lo;
    lo.pool_windows = true;
    lowering::LoweredRegion low;
    ASSERT_NO_THROW(low = lowering::lower_graph(g, lo)) << c.what;
    EXPECT_EQ(count(low.program, lowering::Comp::Kind::Pointwise, "aten::max_pool2d"), c.windows) << c.what;
    EXPECT_EQ(count(low.program, lowering::Comp::Kind::Reduction, "aten::max_pool2d"), c.reductions) << c.what;
    int externs = 0;
    for (const auto& comp : low.program.comps)
      externs += comp.target == "aten::max_pool2d" && comp.kind != lowering::Comp::Kind::Pointwise &&
                 comp.kind != lowering::Comp::Kind::Reduction;
    EXPECT_EQ(externs, c.externs) << c.what;
  }
}

TEST(PoolWindows, TheOptionIsChecked) {
  for (const char* ok : {"auto", "on", "off"}) EXPECT_NO_THROW(api::check_pool_windows(ok));
  try {
    api::check_pool_windows("windows");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "--pool-windows 'windows': use auto, on or off");
  }
}
