// The channels-last layout pass: loop IR before/after (golden), which computations take the
// layout and which keep row-major, and the compiled conv chain against LibTorch eager on the CPU
// (the C++ kernels honour layouts the same way the CUDA ones do).
#include "engine/lowering/channels_last.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "engine/lowering/lower_graph.h"
#include "engine/pipeline/front_end.h"
#include "engine/model/model_impl.h"
#include "engine/commands/check_model.h"
#include "engine/runtime/example_inputs.h"
#include "tests/support/compile_support.h"
#include "tests/support/scripted_models.h"

using namespace kiln;

namespace {

lowering::LoweredRegion lower_example(const char* model, const char* input) {
  auto cm = test::compile_example(model, input, "eager");
  auto regions = cm.rt->regions();
  return lowering::lower_graph(regions.at(0).entries.at(0).graph);
}

const lowering::Comp& named(const lowering::LoopProgram& p, const std::string& name) {
  for (const auto& c : p.comps)
    if (c.name == name) return c;
  throw std::runtime_error("no computation " + name);
}

const std::vector<int> kNhwc = {0, 2, 3, 1};

// The layout pass's dump among a compiled entry's stages.
std::string layout_dump(const std::vector<runtime::StageDump>& stages) {
  for (const auto& st : stages)
    if (st.file == "20_loops_before_fusion.txt") return st.text;
  return "";
}

// One call of the compiled model on fresh random inputs of `shape` against LibTorch eager (rtol 1e-4,
// atol 1e-5: float32 convolutions in another memory order sum in another order).
void expect_call_matches_eager(runtime::CapturedRuntime& rt, const model::Model& model, const std::string& shape) {
  auto x = runtime::make_inputs({parse_input_spec(shape)});
  auto out = rt.run(x)[0].toTensor();
  auto ref = runtime::eager_call(const_cast<torch::jit::Module&>(model.impl->module), {x[0]}).toTensor();
  EXPECT_TRUE(out.allclose(ref, 1e-4, 1e-5)) << shape;
}

// Constant sizes for computations built by hand.
std::vector<lowering::Sym> sizes(std::initializer_list<int64_t> v) {
  std::vector<lowering::Sym> s;
  for (auto x : v) s.push_back(capture::sym_const(x));
  return s;
}

}  // namespace

TEST(ChannelsLast, BeforeAfterGolden) {
  auto lowered = lower_example("tiny_resnet.pt", "2x3x16x16");
  std::string text = "# before\n" + lowering::loop_program_text(lowered.program);
  int changed = lowering::choose_channels_last(lowered.program);
  text += "\n# after (" + std::to_string(changed) + " computations channels-last)\n" +
          lowering::loop_program_text(lowered.program);
  EXPECT_TRUE(lowering::verify(lowered.program).empty());
  auto diff = test::check_golden("lowering/tiny_resnet.pt.channels_last.txt", text);
  EXPECT_TRUE(diff.empty()) << diff;
}

TEST(ChannelsLast, ConvChainWeightsAndFollowersTakeTheLayoutOthersKeepRowMajor) {
  auto lowered = lower_example("tiny_resnet.pt", "2x3x16x16");
  auto& p = lowered.program;
  lowering::choose_channels_last(p);
  for (const char* conv : {"conv2d", "conv2d_1", "conv2d_2"}) EXPECT_EQ(named(p, conv).layout, kNhwc) << conv;
  for (const char* w : {"stem_weight", "c1_weight", "c2_weight"}) EXPECT_EQ(named(p, w).layout, kNhwc) << w;
  // batch_norm → relu → conv, and the residual add after the last conv, all follow.
  for (const char* pw : {"batch_norm", "result", "batch_norm_1", "result_1", "y", "add", "result_2"})
    EXPECT_EQ(named(p, pw).layout, kNhwc) << pw;
  // The region input (the caller's tensor), per-channel parameters, the pooled rows, the head.
  for (const char* rm : {"x", "bn0_weight", "adaptive_avg_pool2d_sum", "adaptive_avg_pool2d", "flatten", "linear"})
    EXPECT_TRUE(named(p, rm).layout.empty()) << rm;
}

TEST(ChannelsLast, RegionOutputsAndNonConstantWeightsStayRowMajorAndNoConvChangesNothing) {
  using namespace lowering;
  LoopProgram p;
  Comp x;
  x.kind = Comp::Kind::Input;
  x.name = "x";
  x.sizes = sizes({1, 4, 8, 8});
  Comp w = x;
  w.name = "w";  // a weight that is a region input, not a parameter
  w.input = 1;
  w.sizes = sizes({4, 4, 3, 3});
  Comp conv;
  conv.kind = Comp::Kind::Extern;
  conv.name = "conv";
  conv.target = "aten::conv2d";
  conv.sizes = sizes({1, 4, 6, 6});
  conv.operands = {0, 1};
  conv.deps = {0, 1};
  Comp relu;
  relu.kind = Comp::Kind::Pointwise;
  relu.name = "relu";
  relu.sizes = conv.sizes;
  relu.body = ve_unary("relu", ve_load(2, {ie_var(0), ie_var(1), ie_var(2), ie_var(3)}));
  relu.deps = {2};
  p.comps = {x, w, conv, relu};
  p.outputs = {3};
  EXPECT_EQ(choose_channels_last(p), 1);  // only the conv itself
  EXPECT_EQ(p.comps[2].layout, kNhwc);
  EXPECT_TRUE(p.comps[1].layout.empty());
  EXPECT_TRUE(p.comps[3].layout.empty());  // the region's output: callers get row-major
  EXPECT_TRUE(verify(p).empty());

  auto mlp = lower_example("small_mlp.pt", "4x64");
  auto before = loop_program_text(mlp.program);
  EXPECT_EQ(choose_channels_last(mlp.program), 0);
  EXPECT_EQ(loop_program_text(mlp.program), before);
}

TEST(ChannelsLast, VerifyRejectsALayoutThatIsNotAPermutation) {
  auto lowered = lower_example("tiny_resnet.pt", "2x3x16x16");
  for (auto& c : lowered.program.comps)
    if (c.name == "result") c.layout = {0, 2, 2, 1};
  auto problems = lowering::verify(lowered.program);
  ASSERT_FALSE(problems.empty());
  EXPECT_NE(problems[0].find("result has a layout that is not a permutation"), std::string::npos) << problems[0];
}

TEST(ChannelsLast, CompiledConvChainMatchesEagerOnTheCpu) {
  auto cm = test::compile_example("tiny_resnet.pt", "2x3x16x16", "kiln", "channels-last");
  ASSERT_TRUE(cm.stages.count("30_kernels.cpp")) << cm.artifacts.note;
  const auto& loops = cm.stages["20_loops_before_fusion.txt"];
  EXPECT_NE(loops.find("conv2d = extern [2, 16, 16, 16] channels-last aten::conv2d"), std::string::npos) << loops;
  // k0_relu runs its loops in storage order: batch, row, column, then the channel innermost.
  const auto& src = cm.stages["30_kernels.cpp"];
  auto k0 = src.find("void k0_relu");
  ASSERT_NE(k0, std::string::npos) << src;
  auto i0 = src.find("for (int64_t i0 ", k0), i2 = src.find("for (int64_t i2 ", k0), i3 = src.find("for (int64_t i3 ", k0),
       i1 = src.find("for (int64_t i1 ", k0);
  EXPECT_TRUE(i0 < i2 && i2 < i3 && i3 < i1) << src.substr(k0, 1200);
  // Against eager on fresh random inputs; tolerance 1e-4 relative (float32 convolutions in
  // another memory order sum in another order).
  EXPECT_LE(test::relative_error(cm, "2x3x16x16"), 1e-4);
  // The accuracy checker poisons every kernel buffer (NaN) before the compiled run.
  runtime::CheckOptions o;
  o.capture.backend = "kiln";
  o.capture.conv_layout = "channels-last";
  auto r = runtime::check_model(cm.model, {parse_input_spec("2x3x16x16")}, o);
  EXPECT_TRUE(r.match) << runtime::check_text(r);
  auto contiguous = test::compile_example("tiny_resnet.pt", "2x3x16x16", "kiln", "contiguous");
  EXPECT_EQ(contiguous.stages["20_loops_before_fusion.txt"].find("channels-last"), std::string::npos);
}

// ResNet's stem (conv → relu → max_pool2d(3, stride 2, padding 1) → conv): the pooling is a
// generated max over each window.
TEST(ChannelsLast, MaxPoolIsAGeneratedWindowMaxThatKeepsTheLayoutAndMatchesEager) {
  auto model = model::load_model(test::stem_model());
  for (const char* layout : {"channels-last", "contiguous"}) {
    capture::CompileOptions o;
    o.backend = "kiln";
    o.conv_layout = layout;
    runtime::CapturedRuntime rt(model, o);
    // 15x15: the last window of each row hangs over the padding on both sides.
    SCOPED_TRACE(layout);
    for (const char* shape : {"2x3x15x15", "2x3x16x16"}) expect_call_matches_eager(rt, model, shape);
    const auto& arts = rt.artifacts(0).at(0);
    EXPECT_TRUE(arts.fallbacks.empty()) << arts.fallbacks.front();
    const std::string loops = layout_dump(arts.stages);
    // The pooled tensor follows the conv's layout; padded taps are masked, their loads clamped in bounds.
    EXPECT_NE(loops.find(std::string("_max = reduction [2, 8, 8, 8]") +
                         (std::string(layout) == "channels-last" ? " channels-last" : "") +
                         " := max over [3, 3] of where(and(and((-1 < ((i2*2 + -1) + i4))"),
              std::string::npos)
        << loops;
    EXPECT_NE(loops.find("max(min(((i2*2 + -1) + i4), 14), 0)"), std::string::npos) << loops;
  }
  // kiln check: every kernel buffer NaN-poisoned before the compiled run.
  runtime::CheckOptions c;
  c.capture.backend = "kiln";
  c.capture.conv_layout = "channels-last";
  auto r = runtime::check_model(model, {parse_input_spec("2x3x15x15")}, c);
  EXPECT_TRUE(r.match) << runtime::check_text(r);
}

// --conv-weights: "kept" converts each constant conv weight once and holds the channels-last copy with
// the region; "per-call" leaves the constants as they are (a kernel of the region copies one for its call). Both
// match eager, with every kernel buffer NaN-poisoned first.
TEST(ChannelsLast, ConvWeightsKeptOrPerCallBothMatchEager) {
  auto model = model::load_model(test::example("tiny_resnet.pt"));
  std::map<std::string, int> nhwc_constants;
  for (const char* weights : {"kept", "per-call"}) {
    capture::CompileOptions o;
    o.backend = "kiln";
    o.conv_layout = "channels-last";
    o.conv_weights = weights;
    o.dynamic = false;
    runtime::CapturedRuntime rt(model, o);
    SCOPED_TRACE(weights);
    for (int i = 0; i < 2; ++i) expect_call_matches_eager(rt, model, "2x3x16x16");
    std::istringstream lines(layout_dump(rt.artifacts(0).at(0).stages));
    for (std::string line; std::getline(lines, line);)
      if (line.find("= constant") != std::string::npos && line.find("channels-last") != std::string::npos)
        ++nhwc_constants[weights];
    runtime::CheckOptions c;
    c.capture = o;
    auto r = runtime::check_model(model, {parse_input_spec("2x3x15x15")}, c);
    EXPECT_TRUE(r.match) << weights << "\n" << runtime::check_text(r);
  }
  EXPECT_GT(nhwc_constants["kept"], 0);
  EXPECT_EQ(nhwc_constants["per-call"], 0);
}

// eager_activation_peak over a program built by hand: x → a → view v of a → b(v) → c(a, b) (output).
// Eager holds a while b is computed (c reads it), then a, b and c at once: 3 × 16 bytes; the view
// holds nothing and keeps a alive through its readers; the input is not counted.
TEST(ChannelsLast, EagerActivationPeakCountsEachResultUntilItsLastReader) {
  using namespace lowering;
  auto comp = [](Comp::Kind kind, const std::string& name, std::vector<int> deps) {
    Comp c;
    c.kind = kind;
    c.name = name;
    c.sizes = {capture::sym_const(4)};
    c.deps = std::move(deps);
    return c;
  };
  LoopProgram p;
  Comp x = comp(Comp::Kind::Input, "x", {});
  x.input = 0;
  Comp v = comp(Comp::Kind::Pointwise, "v", {1});
  v.is_view = true;
  p.comps = {x, comp(Comp::Kind::Pointwise, "a", {0}), v, comp(Comp::Kind::Pointwise, "b", {2}),
             comp(Comp::Kind::Pointwise, "c", {1, 3})};
  p.outputs = {4};
  EXPECT_EQ(eager_activation_peak(p), 48);
  // Without the final reader of a, a dies at the view's reader b: a and b, then b and c.
  p.comps[4].deps = {3};
  EXPECT_EQ(eager_activation_peak(p), 32);
  // A symbolic size: no estimate.
  p.comps[1].sizes = {capture::sym_var("s0")};
  EXPECT_EQ(eager_activation_peak(p), -1);
}

// Automatic conv weights (KeptWithinEager, the CUDA-graph modes' and the CPU's choice): tiny_resnet's three
// conv weights are 20160 bytes of copies; at batch 8 eager's activations are larger and the copies are
// kept, at one 4x4 image smaller and each call converts the weights. The layout dump says which.
TEST(ChannelsLast, WeightCopiesAreKeptOnlyWhileNoLargerThanEagersActivations) {
  auto small = lower_example("tiny_resnet.pt", "1x3x4x4");
  auto large = lower_example("tiny_resnet.pt", "8x3x16x16");
  EXPECT_EQ(lowering::conv_weight_copy_bytes(small.program), (16 * 3 * 3 * 3 + 2 * 16 * 16 * 3 * 3) * 4);
  EXPECT_LT(lowering::eager_activation_peak(small.program), 20160);
  EXPECT_GT(lowering::eager_activation_peak(large.program), 20160);
  auto model = model::load_model(test::example("tiny_resnet.pt"));
  for (const char* shape : {"1x3x4x4", "8x3x16x16"}) {
    capture::CompileOptions o;
    o.backend = "kiln";
    o.conv_layout = "channels-last";
    o.dynamic = false;
    runtime::CapturedRuntime rt(model, o);
    expect_call_matches_eager(rt, model, shape);
    const std::string loops = layout_dump(rt.artifacts(0).at(0).stages);
    const bool kept = std::string(shape) == "8x3x16x16";
    EXPECT_EQ(loops.rfind(kept ? "# conv weights: channels-last copies kept (copies 20160 bytes, eager's activation peak about "
                               : "# conv weights: converted by each call (copies 20160 bytes, eager's activation peak about ",
                          0),
              0u)
        << loops.substr(0, 300);
    EXPECT_EQ(loops.find("weight = constant [16, 16, 3, 3] channels-last") != std::string::npos, kept) << shape;
    // Converted per call: by the region's own copy kernels, one per 3x3 weight.
    EXPECT_EQ(loops.find("# conv weights: 3 copied channels-last by the region's kernels") != std::string::npos, !kept)
        << loops.substr(0, 400);
  }
}

// Default mode on the GPU converts the conv weights in each call; where the weights outweigh eager's
// activations (one 4x4 image) the region stays row-major instead, and the layout dump says why.
TEST(ChannelsLast, RowMajorWhenConvertingTheWeightsEachCallWouldOutweighTheActivations) {
  for (const char* shape : {"1x3x4x4", "8x3x16x16"}) {
    auto cm = test::compile_example("tiny_resnet.pt", shape, "eager");
    const auto regions = cm.rt->regions();
    const auto& graph = regions.at(0).entries.at(0).graph;
    pipeline::FrontEndOptions fe;
    fe.channels_last = true;
    fe.conv_weights = pipeline::FrontEndOptions::ConvWeights::PerCall;
    fe.row_major_when_weights_dominate = true;
    runtime::RegionArtifacts art;
    pipeline::run_front_end(graph, fe, art);
    const std::string loops = layout_dump(art.stages);
    const bool small = std::string(shape) == "1x3x4x4";
    EXPECT_EQ(loops.rfind(small ? "# layout: row-major (conv weights 20160 bytes, more than eager's activation peak of about "
                                : "# conv weights: converted by each call (no copies kept)",
                          0),
              0u)
        << loops.substr(0, 300);
    EXPECT_EQ(loops.find("] channels-last") == std::string::npos, small) << shape;  // no computation takes the layout
  }
}

// Per call, a conv weight channels-last storage would reorder is copied by the region's own kernel right before its
// first convolution, which (with any later one) reads the copy; the constant keeps its layout. Before/after IR golden.
TEST(ChannelsLast, PerCallWeightsAreCopiedByTheRegionsKernelsBeforeTheirConvolutions) {
  auto lowered = lower_example("tiny_resnet.pt", "2x3x16x16");
  lowering::choose_channels_last(lowered.program, false);
  std::string text = "# before\n" + lowering::loop_program_text(lowered.program);
  EXPECT_EQ(lowering::copy_conv_weights_per_call(lowered), 3);
  text += "\n# after\n" + lowering::loop_program_text(lowered.program);
  const auto& p = lowered.program;
  EXPECT_TRUE(lowering::verify(p).empty());
  int convs = 0;
  for (size_t c = 0; c < p.comps.size(); ++c) {
    if (p.comps[c].target != "aten::conv2d" || p.comps[c].kind != lowering::Comp::Kind::Extern) continue;
    ++convs;
    const auto& copy = p.comps[static_cast<size_t>(p.comps[c].operands[1])];
    EXPECT_EQ(p.comps[c].operands[1], static_cast<int>(c) - 1) << "the copy sits right before its convolution";
    EXPECT_EQ(copy.kind, lowering::Comp::Kind::Pointwise);
    EXPECT_EQ(copy.layout, kNhwc);
    ASSERT_EQ(copy.deps.size(), 1u);
    const auto& weight = p.comps[static_cast<size_t>(copy.deps[0])];
    EXPECT_EQ(weight.kind, lowering::Comp::Kind::Constant);
    EXPECT_TRUE(weight.layout.empty());
    EXPECT_EQ(copy.name, weight.name + "_channels_last");
    EXPECT_EQ(std::count(p.comps[c].deps.begin(), p.comps[c].deps.end(), copy.deps[0]), 0);
  }
  EXPECT_EQ(convs, 3);
  // tensor_of follows the shift: every IR value still names a computation of its own name or one it was lowered into.
  EXPECT_EQ(p.comps[static_cast<size_t>(lowered.tensor_of.at("x"))].name, "x");
  auto diff = test::check_golden("lowering/tiny_resnet.pt.weight_copies.txt", text);
  EXPECT_TRUE(diff.empty()) << diff;
}

// No copy where the order does not change (a 1x1 window, one input channel), one copy for a weight two
// convolutions share, none for a weight that is a region input.
TEST(ChannelsLast, PerCallCopiesOnlyWeightsChannelsLastReordersAndEachOnce) {
  using namespace lowering;
  LoweredRegion region;
  auto& p = region.program;
  auto comp = [&](Comp::Kind kind, const std::string& name, std::initializer_list<int64_t> s) {
    Comp c;
    c.kind = kind;
    c.name = name;
    c.sizes = sizes(s);
    if (kind == Comp::Kind::Constant) c.attr = name;
    p.comps.push_back(c);
    region.tensor_of[name] = static_cast<int>(p.comps.size()) - 1;
    return static_cast<int>(p.comps.size()) - 1;
  };
  auto conv = [&](const std::string& name, int in, int w, std::initializer_list<int64_t> s) {
    int c = comp(Comp::Kind::Extern, name, s);
    p.comps[c].target = "aten::conv2d";
    p.comps[c].operands = {in, w};
    p.comps[c].deps = {in, w};
    return c;
  };
  int x = comp(Comp::Kind::Input, "x", {1, 4, 8, 8});
  p.comps[x].input = 0;
  int w1x1 = comp(Comp::Kind::Constant, "w1x1", {4, 4, 1, 1});
  int shared = comp(Comp::Kind::Constant, "shared", {4, 4, 3, 3});
  int single = comp(Comp::Kind::Constant, "single_channel", {4, 1, 3, 3});
  int a = conv("a", x, w1x1, {1, 4, 8, 8});
  int b = conv("b", a, shared, {1, 4, 6, 6});
  int c = conv("c", b, shared, {1, 4, 4, 4});
  int d = conv("d", c, single, {1, 4, 2, 2});
  (void)d;
  Comp out;
  out.kind = Comp::Kind::Pointwise;
  out.name = "out";
  out.sizes = sizes({1, 4, 2, 2});
  out.body = ve_unary("relu", ve_load(7, {ie_var(0), ie_var(1), ie_var(2), ie_var(3)}));
  out.deps = {7};
  p.comps.push_back(out);
  p.outputs = {8};
  choose_channels_last(p, false);
  ASSERT_EQ(copy_conv_weights_per_call(region), 1);
  EXPECT_TRUE(verify(p).empty());
  ASSERT_EQ(p.comps.size(), 10u);
  // The copy of `shared` before b (now at 5 and 6); c at 7 reads it too; a and d read their constants.
  EXPECT_EQ(p.comps[4].name, "a");
  EXPECT_EQ(p.comps[4].operands[1], w1x1);
  EXPECT_EQ(p.comps[5].name, "shared_channels_last");
  EXPECT_EQ(p.comps[6].operands, (std::vector<int>{4, 5}));
  EXPECT_EQ(p.comps[7].operands, (std::vector<int>{6, 5}));
  EXPECT_EQ(p.comps[7].deps, (std::vector<int>{6, 5}));
  EXPECT_EQ(p.comps[8].operands[1], single);
  EXPECT_EQ(p.comps[9].deps, (std::vector<int>{8}));  // the output's load moved with the shift
  EXPECT_EQ(p.outputs, (std::vector<int>{9}));
  EXPECT_EQ(region.tensor_of.at("d"), 8);
  (void)b;
  (void)c;
}

// Per-call copies under automatic dynamic shapes (symbolic after the first size change, recompiled when the image
// size changes): the weights' copies keep their constant sizes while the batch and the image vary; every call
// matches eager.
TEST(ChannelsLast, PerCallWeightCopiesServeEverySizeOfADynamicModel) {
  auto model = model::load_model(test::example("tiny_resnet.pt"));
  capture::CompileOptions o;
  o.backend = "kiln";
  o.conv_layout = "channels-last";
  o.conv_weights = "per-call";
  runtime::CapturedRuntime rt(model, o);
  for (const char* shape : {"2x3x16x16", "5x3x16x16", "3x3x12x12", "2x3x16x16"}) expect_call_matches_eager(rt, model, shape);
  int copied = 0;
  for (const auto& r : rt.regions())
    for (const auto& a : rt.artifacts(r.index))
      copied += layout_dump(a.stages).find("# conv weights: 3 copied channels-last by the region's kernels") != std::string::npos;
  EXPECT_GE(copied, 2) << "the static entry and the dynamic one";
}

// ConvNeXt's blocks: a depthwise 7x7 convolution, permute(0, 2, 3, 1), layer norm over the channels, two linears
// around a GELU, a per-channel scale, permute(0, 3, 1, 2) and the residual add; the stem's LayerNorm2d is the same
// permute pair around a layer norm. Nothing in a block is a convolution extern, so the layout reaches it only through
// what its computations read: the depthwise reads the stem's layer norm (a row-major [N, H, W, C]) through the
// permute, the add reads the second linear's rows likewise, so both walk memory channel by channel and are stored
// channels-last (row-major, their warps' loads and stores were 32 channels apart: 0.50 ms per first-stage depthwise
// kernel of ConvNeXt-T at batch 8 on the H200).
TEST(ChannelsLast, ReadsThroughAPermuteOfChannelsInnermostRowsTakeTheLayout) {
  const std::string path = test::convnext_blocks_model();
  auto cm = test::compile_example(path, "2x3x32x32", "kiln", "channels-last", "generated");
  lowering::LowerOptions lo;
  lo.depthwise = true;
  auto low = lowering::lower_graph(cm.rt->regions().at(0).entries.at(0).graph, lo);
  auto& p = low.program;
  const std::string before = lowering::loop_program_text(p);
  lowering::choose_channels_last(p);
  int depthwise = 0, adds = 0;
  for (const auto& c : p.comps) {
    if (c.kind != lowering::Comp::Kind::Pointwise || c.is_view || c.sizes.size() != 4) continue;
    if (c.target == "aten::conv2d") {
      EXPECT_EQ(c.layout, kNhwc) << c.name << "\n" << lowering::loop_program_text(p);
      ++depthwise;
    }
    if (c.target == "aten::add") {
      EXPECT_EQ(c.layout, kNhwc) << c.name << "\n" << lowering::loop_program_text(p);
      ++adds;
    }
  }
  EXPECT_EQ(depthwise, 2) << before;
  EXPECT_EQ(adds, 2) << before;
  // The depthwise filters [16, 1, 7, 7] are read channel-fastest too: stored [7, 7, 1, 16].
  for (const char* w : {"dw1", "dw2"})
    for (const auto& c : p.comps)
      if (c.kind == lowering::Comp::Kind::Constant && c.name.rfind(w, 0) == 0)
        EXPECT_EQ(c.layout, (std::vector<int>{2, 3, 1, 0})) << c.name;
  EXPECT_TRUE(lowering::verify(p).empty());
  // The compiled model, every layout as chosen, against eager (float32; sums over 49 taps and 64 features in another
  // order: 1e-4 of the largest value).
  EXPECT_LT(test::relative_error(cm, "2x3x32x32"), 1e-4);
}

