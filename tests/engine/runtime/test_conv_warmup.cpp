// Convolutions run ahead of a region's first call (on the GPU, while NVRTC compiles): which ones run, which
// are skipped (symbolic sizes, non-literal arguments) and that a convolution LibTorch refuses is counted,
// never thrown. On the CPU here: the same calls, LibTorch's CPU convolutions.
#include "engine/runtime/conv_warmup.h"

#include <gtest/gtest.h>

#include "engine/capture/sym.h"
#include "engine/lowering/channels_last.h"
#include "engine/lowering/lower_graph.h"
#include "tests/support/compile_support.h"

using namespace kiln;

namespace {

struct Lowered {
  test::CompiledModel cm;
  ir::Graph graph;
  lowering::LoweredRegion lowered;
};

Lowered lower_tiny_resnet() {
  Lowered l;
  l.cm = test::compile_example("tiny_resnet.pt", "2x3x16x16", "eager");
  l.graph = l.cm.rt->regions().at(0).entries.at(0).graph;
  l.lowered = lowering::lower_graph(l.graph);
  lowering::choose_channels_last(l.lowered.program);
  return l;
}

lowering::Comp& named(lowering::LoopProgram& p, const std::string& name) {
  for (auto& c : p.comps)
    if (c.name == name) return c;
  throw std::runtime_error("no computation " + name);
}

}  // namespace

TEST(ConvWarmup, RunsEveryConvolutionOfARegionInItsLayout) {
  auto l = lower_tiny_resnet();
  int convs = 0;
  for (const auto& c : l.lowered.program.comps) convs += c.kind == lowering::Comp::Kind::Extern && c.target == "aten::conv2d";
  ASSERT_EQ(convs, 3);
  EXPECT_EQ(named(l.lowered.program, "conv2d").layout, (std::vector<int>{0, 2, 3, 1}));
  auto w = runtime::warm_convolutions(l.graph, l.lowered.program, "cpu");
  EXPECT_EQ(w.warmed, 3);
  EXPECT_EQ(w.skipped, 0);
  EXPECT_EQ(w.failed, 0);
}

TEST(ConvWarmup, SkipsSymbolicSizesAndNonLiteralArgumentsAndCountsRefusals) {
  auto l = lower_tiny_resnet();
  auto& p = l.lowered.program;
  // The stem's input with a symbolic batch: its size is not known before a call.
  const auto& stem = named(p, "conv2d");
  p.comps[static_cast<size_t>(stem.operands[0])].sizes[0] = capture::sym_var("s0");
  // The second convolution's stride computed at run time.
  l.graph.nodes[static_cast<size_t>(named(p, "conv2d_1").ir_node)].args[3] = ir::Arg::value("stride");
  // The third's weight with the wrong number of input channels: LibTorch refuses it.
  auto& w3 = p.comps[static_cast<size_t>(named(p, "conv2d_2").operands[1])];
  w3.sizes[1] = capture::sym_const(7);
  auto w = runtime::warm_convolutions(l.graph, p, "cpu");
  EXPECT_EQ(w.warmed, 0);
  EXPECT_EQ(w.skipped, 2);
  EXPECT_EQ(w.failed, 1);
}

TEST(ConvWarmup, AProgramFromAnotherGraphIsSkippedNotRun) {
  auto l = lower_tiny_resnet();
  ir::Graph other;  // no nodes where the program's externs point
  auto w = runtime::warm_convolutions(other, l.lowered.program, "cpu");
  EXPECT_EQ(w.warmed, 0);
  EXPECT_EQ(w.skipped, 3);
}

TEST(ConvWarmup, AnInputTooLargeToAllocateIsAFailureNotAThrow) {
  auto l = lower_tiny_resnet();
  auto& p = l.lowered.program;
  // 2^62 × 3 × 16 × 16 elements: the count overflows, so the placeholder itself is refused.
  p.comps[static_cast<size_t>(named(p, "conv2d").operands[0])].sizes[0] = capture::sym_const(int64_t(1) << 62);
  runtime::ConvWarmup w;
  EXPECT_NO_THROW(w = runtime::warm_convolutions(l.graph, p, "cpu"));
  EXPECT_EQ(w.failed, 1);
  EXPECT_EQ(w.warmed, 2);
}

// BERT's miniature (4 layers' attention chains as kiln::scaled_dot_product_attention calls): each runs once
// ahead of the first call, through the region's own call; one of unknown size is skipped, one LibTorch
// refuses (heads that do not divide its operand) is counted, never thrown.
TEST(ConvWarmup, RunsEveryAttentionCallOfARegionOnce) {
  auto cm = test::compile_example(test::data("corpus/bert_embeds.pt"), "2x8x32", "eager");
  lowering::LowerOptions lo;
  lo.attention = lo.attention_float32 = true;
  auto lowered = lowering::lower_graph(cm.rt->regions().at(0).entries.at(0).graph, lo);
  auto& p = lowered.program;
  std::vector<size_t> calls;
  for (size_t c = 0; c < p.comps.size(); ++c)
    if (p.comps[c].kind == lowering::Comp::Kind::Extern && p.comps[c].target == "kiln::scaled_dot_product_attention")
      calls.push_back(c);
  ASSERT_GE(calls.size(), 2u);
  auto w = runtime::warm_attention(p, "cpu");
  EXPECT_EQ(w.warmed, static_cast<int>(calls.size()));
  EXPECT_EQ(w.skipped, 0);
  EXPECT_EQ(w.failed, 0);
  // The first call's q with a symbolic batch; the second's heads not dividing its operand.
  auto& first = p.comps[calls[0]];
  p.comps[static_cast<size_t>(first.operands[0])].sizes[0] = capture::sym_var("s0");
  auto& second = p.comps[calls[1]];
  for (auto& h : second.attn_heads)
    if (h > 0) h = 7;
  w = runtime::warm_attention(p, "cpu");
  EXPECT_EQ(w.skipped, 1);
  EXPECT_EQ(w.failed, 1);
  EXPECT_EQ(w.warmed, static_cast<int>(calls.size()) - 2);
}

// cuDNN's benchmark flag is LibTorch's, process-wide: a scope sets it and puts back what it found, nested or left
// by an exception (warm_convolutions's runs, max-autotune's convolutions in a region).
TEST(ConvWarmup, BenchmarkModeIsPutBackAfterItsScope) {
  auto& ctx = at::globalContext();
  const bool outside = ctx.benchmarkCuDNN();
  ctx.setBenchmarkCuDNN(false);
  {
    const runtime::CudnnBenchmarkScope on(true);
    EXPECT_TRUE(ctx.benchmarkCuDNN());
    {
      const runtime::CudnnBenchmarkScope off(false);
      EXPECT_FALSE(ctx.benchmarkCuDNN());
    }
    EXPECT_TRUE(ctx.benchmarkCuDNN());
  }
  EXPECT_FALSE(ctx.benchmarkCuDNN());
  try {
    const runtime::CudnnBenchmarkScope on(true);
    throw std::runtime_error("a convolution refused");
  } catch (const std::runtime_error&) {
  }
  EXPECT_FALSE(ctx.benchmarkCuDNN());
  ctx.setBenchmarkCuDNN(outside);
}
