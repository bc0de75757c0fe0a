// Depthwise convolutions lowered as generated arithmetic (lowering/lower_graph.h, LowerOptions::depthwise): which
// convolutions take it, the loop IR and fusion around it, the layout it keeps, and compiled results against LibTorch
// eager on the CPU (depthwise "generated"; on the GPU auto's choice) for every padding, stride and dilation case.
#include <gtest/gtest.h>
#include "kiln_build_config.h"

#include <regex>

#include <set>

#include <torch/script.h>

#if KILN_WITH_CUDA
#include "engine/codegen/cuda/emit_cuda.h"
#include "engine/codegen/cuda/kernel_mapping.h"
#include "engine/codegen/cuda/nvrtc_compiler.h"
#endif
#include "engine/fusion/schedule.h"
#include "engine/pipeline/front_end.h"
#include "engine/lowering/channels_last.h"
#include "engine/lowering/lower_graph.h"
#include "engine/model/model_impl.h"
#include "engine/runtime/captured_runtime.h"
#include "engine/runtime/example_inputs.h"
#include "tests/support/compile_support.h"
#include "tests/support/ir_graphs.h"
#include "tests/support/paths.h"
#include "tests/support/scripted_models.h"

using namespace kiln;

namespace {

// A model with the parameters `params` (name, sizes) and TorchScript `source`, saved to a temp archive.
std::string model_with(const std::string& name, const std::vector<std::pair<std::string, std::vector<int64_t>>>& params,
                       const std::string& source) {
  torch::jit::Module m(name);
  for (const auto& [p, sizes] : params) m.register_parameter(p, torch::randn(sizes), false);
  m.define(source);
  const std::string path = test::temp_dir() + "/" + name + ".pt";
  m.save(path);
  return path;
}

// Compiled with the kiln backend (static shapes), depthwise convolutions generated or not, after one call.
test::CompiledModel compile(const std::string& path, const std::string& input, const std::string& depthwise,
                            const std::string& layout = "auto") {
  return test::compile_example(path, input, "kiln", layout, depthwise);
}

// The first region's first entry's graph, lowered with or without depthwise.
lowering::LoweredRegion lowered(test::CompiledModel& c, bool depthwise) {
  lowering::LowerOptions lo;
  lo.depthwise = depthwise;
  return lowering::lower_graph(c.rt->regions().at(0).entries.at(0).graph, lo);
}

int count(const lowering::LoopProgram& p, lowering::Comp::Kind kind, const std::string& target) {
  int n = 0;
  for (const auto& comp : p.comps) n += comp.kind == kind && comp.target == target;
  return n;
}

}  // namespace

TEST(Depthwise, EveryWindowStridePaddingAndDilationMatchesEager) {
  const std::string path = test::depthwise_cases_model("depthwise_cases");
  for (const char* input : {"2x8x13x11", "1x8x16x16", "3x8x9x20"}) {
    auto c = compile(path, input, "generated");
    auto low = lowered(c, true);
    EXPECT_EQ(count(low.program, lowering::Comp::Kind::Extern, "aten::conv2d"), 0) << input;
    EXPECT_EQ(count(low.program, lowering::Comp::Kind::Pointwise, "aten::conv2d"), 6) << input;
    // Float32 sums of at most 49 products in another order than LibTorch's: 1e-5 of the largest value.
    EXPECT_LT(test::relative_error(c, input), 1e-5) << input;
  }
}

TEST(Depthwise, EachConvolutionAndTheArithmeticAfterItAreOneKernel) {
  const std::string path = test::depthwise_cases_model("depthwise_cases");
  auto generated = compile(path, "2x8x13x11", "generated");
  auto separate = compile(path, "2x8x13x11", "extern");
  const auto& art = generated.rt->artifacts(0).at(0);
  const auto& before = separate.rt->artifacts(0).at(0);
  // Six convolutions: the first one's affine and sigmoid inside its kernel, the 7x7's relu and the last (one tap,
  // reading that once) inside the 7x7's; the second window reads the sigmoid stored (not an exp per tap): five
  // kernels, no extern.
  std::string names;
  for (const auto& k : art.kernels) names += k.name + " ";
  for (const auto& d : art.decisions) names += "\n" + d.first + " -> " + d.second + ": " + d.reason;
  EXPECT_EQ(art.kernels.size(), 5u) << names;
  EXPECT_EQ(count(lowered(separate, false).program, lowering::Comp::Kind::Extern, "aten::conv2d"), 6);
  EXPECT_LT(before.kernels.size(), art.kernels.size());  // extern: the affine-sigmoid and the biases only
  EXPECT_LT(test::relative_error(separate, "2x8x13x11"), 1e-5);
}

TEST(Depthwise, OnlyOneFilterPerChannelIsGenerated) {
  // groups 2 (not depthwise), a channel multiplier (16 filters over 8 channels), a 9x9 window (81 taps), and
  // padding "same" (a string): each stays LibTorch's convolution, and the results still match eager.
  const std::string path = model_with(
      "not_depthwise", {{"g2", {8, 4, 3, 3}}, {"m2", {16, 1, 3, 3}}, {"w9", {16, 1, 9, 9}}, {"w3", {16, 1, 3, 3}}}, R"JIT(
def forward(self, x):
    y = torch.conv2d(x, self.g2, None, [1, 1], [1, 1], [1, 1], 2)
    y = torch.conv2d(y, self.m2, None, [1, 1], [1, 1], [1, 1], 8)
    y = torch.conv2d(y, self.w9, None, [1, 1], [4, 4], [1, 1], 16)
    return torch.conv2d(y, self.w3, None, [1, 1], "same", [1, 1], 16)
)JIT");
  auto c = compile(path, "2x8x12x12", "generated");
  auto low = lowered(c, true);
  EXPECT_EQ(count(low.program, lowering::Comp::Kind::Pointwise, "aten::conv2d"), 0);
  EXPECT_LT(test::relative_error(c, "2x8x12x12"), 1e-5);
}

TEST(Depthwise, KeepsTheChannelsLastLayoutOfItsInput) {
  // pointwise conv → relu → depthwise → relu → pointwise conv: the depthwise reads an NHWC input, so it is
  // stored NHWC too (neighbouring threads, neighbouring channels) and the relu after it follows.
  const std::string path = model_with("depthwise_block", {{"a", {8, 4, 1, 1}}, {"d", {8, 1, 3, 3}}, {"p", {4, 8, 1, 1}}}, R"JIT(
def forward(self, x):
    y = torch.relu(torch.conv2d(x, self.a))
    y = torch.relu(torch.conv2d(y, self.d, None, [2, 2], [1, 1], [1, 1], 8))
    return torch.conv2d(y, self.p)
)JIT");
  auto c = compile(path, "2x4x10x10", "generated", "channels-last");
  auto low = lowered(c, true);
  lowering::choose_channels_last(low.program);
  const std::vector<int> nhwc = {0, 2, 3, 1};
  int depthwise = 0;
  for (const auto& comp : low.program.comps)
    if (comp.kind == lowering::Comp::Kind::Pointwise && comp.target == "aten::conv2d") {
      EXPECT_EQ(comp.layout, nhwc) << comp.name;
      ++depthwise;
    }
  EXPECT_EQ(depthwise, 1);
  // Its filters, a constant [8, 1, 3, 3], stored [3, 3, 1, 8]: neighbouring channels' taps are neighbours.
  for (const auto& comp : low.program.comps)
    if (comp.kind == lowering::Comp::Kind::Constant && comp.sizes.size() == 4 && capture::sym_is_const(comp.sizes[1]) &&
        comp.sizes[1]->value == 1)
      EXPECT_EQ(comp.layout, (std::vector<int>{2, 3, 1, 0})) << comp.name;
  EXPECT_LT(test::relative_error(c, "2x4x10x10"), 1e-5);
}

TEST(Depthwise, AWindowReadByAConvolutionReadsItsFiltersChannelsLast) {
  // pointwise conv → depthwise (no activation) → pointwise conv: the depthwise takes the layout as the second
  // convolution's input, not from the one before it; its filters are stored channels-last all the same, or each
  // warp's loads of a tap would be 49 floats apart.
  const std::string path = model_with("depthwise_into_conv", {{"a", {8, 4, 1, 1}}, {"d", {8, 1, 7, 7}}, {"p", {4, 8, 1, 1}}}, R"JIT(
def forward(self, x):
    y = torch.conv2d(x, self.a)
    y = torch.conv2d(y, self.d, None, [1, 1], [3, 3], [1, 1], 8)
    return torch.conv2d(y, self.p)
)JIT");
  for (bool kept : {true, false}) {
    SCOPED_TRACE(kept ? "weights kept" : "weights per call");
    auto c = compile(path, "2x4x14x14", "generated", "channels-last");
    auto low = lowered(c, true);
    lowering::choose_channels_last(low.program, kept);
    int filters = 0;
    for (const auto& comp : low.program.comps)
      if (comp.kind == lowering::Comp::Kind::Constant && comp.name == "d") {
        EXPECT_EQ(comp.layout, (std::vector<int>{2, 3, 1, 0}));
        ++filters;
      }
    EXPECT_EQ(filters, 1);
    EXPECT_LT(test::relative_error(c, "2x4x14x14"), 1e-5);
  }
}

TEST(Depthwise, MobileNetAndEfficientNetMiniaturesMatchEager) {
  // The corpus miniatures (random weights, 2x3x32x32): their depthwise convolutions generated on the CPU, the rest
  // as Kiln compiles them there. Float32 through a dozen blocks with batch norms: 1e-4 of the largest value.
  for (const char* name : {"mobilenet_v3_small", "efficientnet_b0"}) {
    auto c = compile(test::data("corpus/" + std::string(name) + ".pt"), "2x3x32x32", "generated");
    int generated = 0;
    for (size_t r = 0; r < c.rt->regions().size(); ++r) {
      if (c.rt->regions()[r].entries.empty()) continue;
      lowering::LowerOptions lo;
      lo.depthwise = true;
      generated += count(lowering::lower_graph(c.rt->regions()[r].entries[0].graph, lo).program,
                         lowering::Comp::Kind::Pointwise, "aten::conv2d");
    }
    EXPECT_GE(generated, 3) << name;
    EXPECT_LT(test::relative_error(c, "2x3x32x32"), 1e-4) << name;
  }
}

TEST(Depthwise, AWindowIsSummedOnceInAPointwiseKernelWithItsBatchNormAndActivation) {
  // EfficientNet's squeeze-excitation: depthwise → batch norm → SiLU, read by the pooling and by the scaling, through
  // the GPU's front end (channels-last, recomputation on, row kernels taking in the kernel before them). The window
  // goes into one pointwise kernel with its batch norm and SiLU; never into a reader's kernel again, and never into
  // the pooling's row kernel (whose walk along the rows reads each tap strided: 7-15x slower on the H200).
  auto c = compile(test::data("corpus/efficientnet_b0.pt"), "2x3x32x32", "generated");
  auto out = test::gpu_front_end(c);
  int windows = 0;
  for (const auto& comp : out.lowered.program.comps) {
    if (comp.kind != lowering::Comp::Kind::Pointwise || comp.target != "aten::conv2d") continue;
    ++windows;
    std::vector<const fusion::FusedKernel*> in;
    for (const auto& k : out.fused.kernels)
      if (std::find(k.nodes.begin(), k.nodes.end(), comp.name) != k.nodes.end()) in.push_back(&k);
    ASSERT_EQ(in.size(), 1u) << comp.name;
    EXPECT_EQ(in[0]->kind, fusion::FusedKernel::Kind::Pointwise) << in[0]->name;
    EXPECT_EQ(in[0]->nodes.size(), 3u) << in[0]->name;  // the window, its batch norm and its SiLU
  }
  EXPECT_GE(windows, 3);
#if KILN_WITH_CUDA  // the CUDA code generator is built with the CUDA toolkit only
  // Each window's CUDA kernel takes neighbouring outputs along the width per thread (the first of 8, 4, 7, 6, 5 and 2
  // that divides the width, else the whole width up to 8), for each of 2 along the height where the height is even,
  // loading the taps they share once, and NVRTC compiles it.
  // max-autotune's candidates (its channels multiples of 4) also take 4 channels per thread as float4s, each tap
  // loaded once as one float4 (launched on 16-byte aligned buffers only).
  std::vector<codegen::CudaKernelInfo> info;
  const std::string src = codegen::emit_cuda(out.fused, {}, &info, true);
  int along_width = 0, wide = 0, vectors = 0;
  auto loaded_once = [](const std::string& body, const std::string& prefix) {
    std::set<std::string> loads;
    for (size_t at = body.find(" = "); at != std::string::npos; at = body.find(" = ", at + 1)) {
      const std::string load = body.substr(at + 3, body.find(';', at) - at - 3);
      if (load.rfind(prefix, 0) == 0) EXPECT_TRUE(loads.insert(load).second) << load;
    }
    return loads.size();
  };
  for (size_t k = 0; k < info.size(); ++k) {
    bool window = false;
    bool convolution = false;  // the input's taps and the filter's: not a pooling's window
    for (int comp : out.fused.kernels[k].comps) {
      window |= fusion::reads_a_window(out.fused.program.comps[comp].body);
      convolution |= fusion::reads_a_convolution_window(out.fused.program.comps[comp].body);
    }
    if (!window) continue;
    EXPECT_TRUE(convolution) << info[k].name;
    const auto& first = out.fused.program.comps[out.fused.kernels[k].comps[0]];
    const int width = first.sizes[3]->value;
    int along = width <= 8 ? width : 1;
    for (int d : {8, 4, 7, 6, 5, 2})
      if (width % d == 0) {
        along = d;
        break;
      }
    const int height = first.sizes[2]->value % 2 == 0 ? 2 : 1;
    EXPECT_EQ(info[k].vector_width, along * height) << info[k].name;
    EXPECT_EQ(info[k].variants.at(0).window_height, height) << info[k].name;
    EXPECT_EQ(info[k].variants.at(0).window_rows, width > 1) << info[k].name;  // a 1-wide map: one per thread
    EXPECT_EQ(info[k].variants.at(0).window_lanes, 1) << info[k].name;
    along_width += info[k].variants.at(0).window_rows;
    wide += width > 1;
    if (width == 1) continue;
    // Every tap the outputs share is loaded once: no load is written twice.
    EXPECT_GT(loaded_once(src.substr(info[k].source_begin, info[k].function_end - info[k].source_begin), "b"), 9u);
    ASSERT_EQ(first.sizes[1]->value % 4, 0) << info[k].name;
    const std::string c4 = info[k].name + "_c4r1";
    const auto form = std::find_if(info[k].variants.begin(), info[k].variants.end(),
                                   [&](const codegen::CudaKernelVariant& v) { return v.function == c4; });
    ASSERT_NE(form, info[k].variants.end()) << c4;
    EXPECT_EQ(form->window_lanes, 4);
    EXPECT_EQ(form->vector_width, 4);
    EXPECT_TRUE(form->aligned16);
    EXPECT_FALSE(info[k].variants[0].aligned16);
    const size_t begin = src.find("void " + c4 + "("), end = src.find("\n}\n", begin);
    ASSERT_NE(begin, std::string::npos) << c4;
    const std::string fn = src.substr(begin, end - begin);
    EXPECT_GT(loaded_once(fn, "*reinterpret_cast<const float4*>(b"), 9u);
    EXPECT_FALSE(std::regex_search(fn, std::regex("b[0-9]+\\["))) << fn;  // no scalar load or store
    vectors += fn.find("*reinterpret_cast<float4*>(b") != std::string::npos;  // stored as float4s
  }
  EXPECT_EQ(along_width, wide);
  EXPECT_GE(wide, 3);
  EXPECT_EQ(vectors, wide);
  EXPECT_GT(codegen::compile_cuda(src, "sm_90").cubin.size(), 0u);
#endif
}

TEST(Depthwise, TheCudaKernelsOutputsPerThreadFollowTheWindowsWidth) {
  // Channels-last windows (between 1x1 convolutions): a 3x3 stride-1 window 14 or 11 wide, then a 5x5 stride-2 one 7
  // or 6 wide: 7 outputs per thread along the 14-wide (its largest divisor up to 8), a whole 7-wide or 6-wide row,
  // one output per thread on 11 (odd and above 8). With 8 channels max-autotune's candidates can take 4 channels per
  // thread as float4s, with 6 they cannot. Every form, max-autotune's candidates included, compiles with NVRTC.
  struct Case {
    int channels;
    std::string shape;
    std::vector<int> widths, rows;
    int lanes;
  };
  for (const auto& t : std::vector<Case>{{8, "2x8x14x14", {14, 7}, {7, 7}, 4},
                                         {8, "2x8x11x11", {11, 6}, {1, 6}, 4},
                                         {6, "2x6x14x14", {14, 7}, {7, 7}, 1},
                                         {6, "2x6x11x11", {11, 6}, {1, 6}, 1}}) {
    SCOPED_TRACE(t.shape);
    const int64_t ch = t.channels;
    const std::string path = model_with("dw_widths" + std::to_string(ch),
                                        {{"w0", {ch, ch, 1, 1}}, {"w3", {ch, 1, 3, 3}}, {"w5", {ch, 1, 5, 5}}},
                                        "\ndef forward(self, x):\n"
                                        "    y = torch.conv2d(x, self.w0, None, [1, 1], [0, 0], [1, 1], 1)\n"
                                        "    y = torch.relu(torch.conv2d(y, self.w3, None, [1, 1], [1, 1], [1, 1], " +
                                            std::to_string(ch) + "))\n"
                                        "    y = torch.conv2d(y, self.w5, None, [2, 2], [2, 2], [1, 1], " +
                                            std::to_string(ch) + ") + 1.0\n"
                                        "    return torch.conv2d(y, self.w0, None, [1, 1], [0, 0], [1, 1], 1)\n");
    auto c = compile(path, t.shape, "generated");
    pipeline::FrontEndOptions fe;
    fe.channels_last = true;
    fe.depthwise = true;
    fe.conv_weights = pipeline::FrontEndOptions::ConvWeights::PerCall;
    runtime::RegionArtifacts art;
    auto out = pipeline::run_front_end(c.rt->regions().at(0).entries.at(0).graph, fe, art);
    std::vector<int> seen, rows;
    for (const auto& k : out.fused.kernels) {
      bool window = false;
      for (int comp : k.comps) window |= fusion::reads_a_window(out.fused.program.comps[comp].body);
      if (!window) continue;
      seen.push_back(static_cast<int>(out.fused.program.comps[k.comps[0]].sizes[3]->value));
#if KILN_WITH_CUDA  // the CUDA code generator is built with the CUDA toolkit only
      rows.push_back(codegen::window_rows(out.fused, k));
      EXPECT_EQ(codegen::window_lanes(out.fused, k), t.lanes) << seen.back();
#endif
    }
    EXPECT_EQ(seen, t.widths);
#if KILN_WITH_CUDA
    EXPECT_EQ(rows, t.rows);
    std::vector<codegen::CudaKernelInfo> info;
    const std::string src = codegen::emit_cuda(out.fused, {}, &info, true);  // with max-autotune's forms
    EXPECT_GT(codegen::compile_cuda(src, "sm_90").cubin.size(), 0u);
#endif
  }
}

TEST(Depthwise, AHostileConvolutionIsNotGenerated) {
  // A graph built by hand (a program's graph is read, not run: its arguments may disagree with its metadata). Only
  // the convolution as PyTorch would run it is generated; every other is lowered as LibTorch's call, whose own
  // checks then answer. Never a load outside the input: the taps' bounds come from the input's sizes.
  using test::int_list;
  using test::tensor_meta;
  struct Case {
    const char* what;
    ir::ValueMeta weight;
    ir::Arg stride, padding, dilation, groups;
    ir::ValueMeta out;
    bool generated;
  };
  const std::vector<Case> cases = {
      {"as PyTorch runs it", tensor_meta({8, 1, 3, 3}), int_list({1, 1}), int_list({1, 1}), int_list({1, 1}), ir::Arg::integer(8),
       tensor_meta({2, 8, 6, 6}), true},
      {"output sizes that disagree", tensor_meta({8, 1, 3, 3}), int_list({1, 1}), int_list({1, 1}), int_list({1, 1}), ir::Arg::integer(8),
       tensor_meta({2, 8, 7, 7}), false},
      {"a zero stride", tensor_meta({8, 1, 3, 3}), int_list({0, 1}), int_list({1, 1}), int_list({1, 1}), ir::Arg::integer(8),
       tensor_meta({2, 8, 6, 6}), false},
      {"a negative padding", tensor_meta({8, 1, 3, 3}), int_list({1, 1}), int_list({-1, 1}), int_list({1, 1}), ir::Arg::integer(8),
       tensor_meta({2, 8, 2, 6}), false},
      {"a zero dilation", tensor_meta({8, 1, 3, 3}), int_list({1, 1}), int_list({1, 1}), int_list({0, 1}), ir::Arg::integer(8),
       tensor_meta({2, 8, 8, 6}), false},
      {"groups other than the channels", tensor_meta({8, 1, 3, 3}), int_list({1, 1}), int_list({1, 1}), int_list({1, 1}),
       ir::Arg::integer(4), tensor_meta({2, 8, 6, 6}), false},
      {"a filter of two channels", tensor_meta({8, 2, 3, 3}), int_list({1, 1}), int_list({1, 1}), int_list({1, 1}), ir::Arg::integer(8),
       tensor_meta({2, 8, 6, 6}), false},
      {"a window of 81 taps", tensor_meta({8, 1, 9, 9}), int_list({1, 1}), int_list({4, 4}), int_list({1, 1}), ir::Arg::integer(8),
       tensor_meta({2, 8, 6, 6}), false},
      {"three strides", tensor_meta({8, 1, 3, 3}), int_list({1, 1, 1}), int_list({1, 1}), int_list({1, 1}), ir::Arg::integer(8),
       tensor_meta({2, 8, 6, 6}), false},
      {"a dilation that would overflow", tensor_meta({8, 1, 3, 3}), int_list({1, 1}), int_list({1, 1}),
       int_list({int64_t{1} << 62, 1}), ir::Arg::integer(8), tensor_meta({2, 8, 6, 6}), false},
      {"a weight of another dtype", tensor_meta({8, 1, 3, 3}, ir::DType::Float16), int_list({1, 1}), int_list({1, 1}), int_list({1, 1}),
       ir::Arg::integer(8), tensor_meta({2, 8, 6, 6}), false},
  };
  for (const auto& c : cases) {
    ir::Graph g;
    ir::Node x;
    x.op = ir::NodeOp::Placeholder;
    x.target = "x";
    x.outputs = {{"x", tensor_meta({2, 8, 6, 6})}};
    g.nodes.push_back(x);
    ir::Node w;
    w.op = ir::NodeOp::GetAttr;
    w.target = "w";
    w.outputs = {{"w", c.weight}};
    g.nodes.push_back(w);
    ir::Node conv;
    conv.target = "aten::conv2d";
    conv.args = {ir::Arg::value("x"), ir::Arg::value("w"), ir::Arg::none(), c.stride, c.padding, c.dilation, c.groups};
    conv.outputs = {{"y", c.out}};
    g.nodes.push_back(conv);
    g.nodes.push_back(test::output_node("y"));
    lowering::LowerOptions lo;
    lo.depthwise = true;
    auto low = lowering::lower_graph(g, lo);
    EXPECT_EQ(count(low.program, lowering::Comp::Kind::Pointwise, "aten::conv2d"), c.generated ? 1 : 0) << c.what;
    EXPECT_EQ(count(low.program, lowering::Comp::Kind::Extern, "aten::conv2d"), c.generated ? 0 : 1) << c.what;
  }
}
