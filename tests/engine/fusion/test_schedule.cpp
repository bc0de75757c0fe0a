// Fusion, before (loop IR) / after (kernels and decisions), and the fusion rules users rely on.
#include "engine/fusion/schedule.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "engine/lowering/lower_graph.h"
#include "engine/pipeline/front_end.h"

#include "tests/support/compile_support.h"
#include "tests/support/scripted_models.h"

using namespace kiln;

TEST(Schedule, BeforeAfterGoldens) {
  for (auto [name, input] : std::vector<std::pair<const char*, const char*>>{
           {"small_mlp.pt", "4x64"}, {"block.pt", "2x16x64"}, {"tiny_resnet.pt", "2x3x16x16"}}) {
    auto cm = test::compile_example(name, input);
    std::string text = "# before\n" + cm.stages["20_loops_before_fusion.txt"] + "\n# after\n" +
                       cm.stages["21_loops_after_fusion.txt"] + "\n# decisions\n" + cm.stages["22_fusion_decisions.txt"];
    auto diff = test::check_golden(std::string("fusion/") + name + ".txt", text);
    EXPECT_TRUE(diff.empty()) << diff;
  }
}

TEST(Schedule, SoftmaxAndLayerNormAreOneRowKernelEach) {
  auto cm = test::compile_example("block.pt", "2x16x64");
  int softmax = 0, layer_norm = 0;
  for (const auto& k : cm.artifacts.kernels) {
    bool has_att = false, has_ln = false, has_ln1 = false;
    for (const auto& n : k.nodes) {
      has_att |= n == "att";
      has_ln |= n == "layer_norm";
      has_ln1 |= n == "layer_norm_1";
    }
    if (has_att) ++softmax;
    if (has_ln) ++layer_norm;
    if (has_ln1) ++layer_norm;
  }
  EXPECT_EQ(softmax, 1);     // max, sum and the normalization in one kernel
  EXPECT_EQ(layer_norm, 2);  // each layer_norm in exactly one kernel
  const auto& after = cm.stages["21_loops_after_fusion.txt"];
  EXPECT_NE(after.find("kernel k2_row_softmax rows 2,4,16, computes att_max att_sum att"), std::string::npos) << after;
}

TEST(Schedule, PointwiseTailAfterEachLinearIsOneKernel) {
  auto cm = test::compile_example("small_mlp.pt", "4x64");
  // linear -> relu -> linear -> tanh * 0.5 + x: relu after l1, and tanh/mul/add after l2.
  ASSERT_EQ(cm.artifacts.kernels.size(), 2u);
  EXPECT_EQ(cm.artifacts.kernels[1].nodes, (std::vector<std::string>{"tanh", "mul", "add"}));
}

TEST(Schedule, EveryUnfusedNeighbourPairIsExplained) {
  auto cm = test::compile_example("block.pt", "2x16x64");
  const auto& decisions = cm.artifacts.decisions;
  ASSERT_FALSE(decisions.empty());
  for (const auto& d : decisions) {
    EXPECT_FALSE(d.reason.empty()) << d.first << " -> " << d.second;
  }
  // Every producer feeding a kernel it is not part of appears in the log.
  int unfused = 0;
  for (const auto& d : decisions) unfused += d.fused ? 0 : 1;
  EXPECT_GE(unfused, 6);  // one per extern input at least
}

TEST(Schedule, NoFusionGivesOneKernelPerComputation) {
  auto fused = test::compile_example("small_mlp.pt", "4x64", "kiln");
  auto unfused = test::compile_example("small_mlp.pt", "4x64", "aot_eager");
  EXPECT_GT(unfused.artifacts.kernels.size(), fused.artifacts.kernels.size());
  EXPECT_LT(test::relative_error(unfused, "4x64"), 1e-5);
}

namespace {

// The fusion stages of a scripted model scheduled as the GPU target schedules it (recomputation on;
// the CPU target turns it off): captured with the eager backend, lowered, then fusion::schedule.
struct Scheduled {
  std::map<std::string, std::string> stages;
  size_t kernels = 0;
};
Scheduled schedule_for_gpu(const std::string& path, const std::string& input) {
  auto cm = test::compile_example(path, input, "eager");
  auto lowered = lowering::lower_graph(cm.rt->regions().at(0).entries.at(0).graph);
  Scheduled s;
  s.stages["20_loops_before_fusion.txt"] = lowering::loop_program_text(lowered.program);
  auto fused = fusion::schedule(lowered.program);
  s.stages["21_loops_after_fusion.txt"] = fusion::fused_program_text(fused);
  s.stages["22_fusion_decisions.txt"] = fusion::decisions_text(fused);
  s.kernels = fused.kernels.size();
  return s;
}

// Kernels of a compiled model that compute (realize) the named value by itself or among others.
template <class Stages>
int kernels_computing(const Stages& cm, const std::string& value) {
  int n = 0;
  std::istringstream after(cm.stages.at("21_loops_after_fusion.txt"));
  for (std::string line; std::getline(after, line);) {
    if (line.rfind("kernel ", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(" computes ") + 10));
    for (std::string w; words >> w;) n += w == value;
  }
  return n;
}

}  // namespace

// A squeeze-excitation activation: read by its pooling (a reduction over every element) and by the
// scaling (pointwise over every element). Recomputing it in both moves fewer bytes than writing it
// and reading it back twice, so no kernel stores it; the results stay eager's.
TEST(Schedule, AnActivationReadOnceByEachOfTwoConsumersIsRecomputedInBoth) {
  auto path = test::scripted_model("se_act", R"JIT(
def forward(self, x):
    a = torch.sigmoid(x * 1.5 + 0.25) * x
    s = torch.sigmoid(a.mean([2, 3], True))
    return a * s
)JIT");
  auto cm = schedule_for_gpu(path, "2x8x6x5");
  const auto& before = cm.stages.at("20_loops_before_fusion.txt");
  ASSERT_NE(before.find("a ="), std::string::npos) << before;  // the activation is its own computation before
  EXPECT_EQ(kernels_computing(cm, "a"), 0) << cm.stages.at("21_loops_after_fusion.txt");
  const auto& decisions = cm.stages.at("22_fusion_decisions.txt");
  EXPECT_NE(decisions.find("fused     a -> "), std::string::npos) << decisions;
  EXPECT_NE(decisions.find("recomputed in each of its 2 consumers"), std::string::npos) << decisions;
}

// A residual add read by its layer norm's mean, variance (twice, at one place) and normalization
// is recomputed in the layer norm's row kernel from the add's two inputs: no kernel of its own.
TEST(Schedule, AResidualAddIsRecomputedInsideItsLayerNorm) {
  auto path = test::scripted_model("residual_ln", R"JIT(
def forward(self, x):
    h = torch.matmul(x, x) * 0.5 + x
    return torch.layer_norm(h, [16])
)JIT");
  auto cm = schedule_for_gpu(path, "16x16");
  EXPECT_EQ(kernels_computing(cm, "h"), 0) << cm.stages.at("21_loops_after_fusion.txt");
  EXPECT_EQ(cm.kernels, 1u) << cm.stages.at("21_loops_after_fusion.txt");
  EXPECT_NE(cm.stages.at("22_fusion_decisions.txt").find("recomputed in each of its 3 consumers"), std::string::npos)
      << cm.stages.at("22_fusion_decisions.txt");
  // The CPU target keeps the buffer (FrontEndOptions::recompute) and matches eager.
  auto cpu = test::compile_example(path, "16x16");
  EXPECT_EQ(cpu.stages.at("22_fusion_decisions.txt").find("recomputed"), std::string::npos);
  EXPECT_LT(test::relative_error(cpu, "16x16"), 1e-5);
}

// Where recomputing would cost more than the buffer it saves, the producer is stored once:
// consumers that read only part of it at a time (two shifted slices), or a producer of four stored full-size inputs read by two
// (2 x 4 reads against 4 reads, a write and 2 reads).
TEST(Schedule, ProducersThatRecomputingWouldMakeDearerKeepTheirBuffer) {
  auto twice = schedule_for_gpu(test::scripted_model("read_twice", R"JIT(
def forward(self, x):
    a = torch.sigmoid(x * 1.5 + 0.25) * x
    return (a[:, 1:] * a[:, :-1]).sum([1]), a + 1.0
)JIT"),
                                     "16x16");
  EXPECT_EQ(kernels_computing(twice, "a"), 1) << twice.stages.at("21_loops_after_fusion.txt");
  EXPECT_NE(twice.stages.at("22_fusion_decisions.txt").find("used by 2 consumers"), std::string::npos);

  auto cm = schedule_for_gpu(test::scripted_model("four_inputs", R"JIT(
def forward(self, x):
    y = torch.cos(x)
    z = torch.sin(x)
    w = torch.exp(x * 0.1)
    v = torch.tanh(x)
    a = torch.sigmoid(y * z + w * v)
    return a.sum([1]), a * 3.0, y, z, w, v
)JIT"),
                                  "4x16");
  EXPECT_EQ(kernels_computing(cm, "a"), 1) << cm.stages.at("21_loops_after_fusion.txt") << cm.stages.at("22_fusion_decisions.txt");
}

// A residual add that is stored (the block returns it) runs as the first stage of its layer norm's
// row kernel, and the normalized output viewed 2-d for a product (its rows folded into one dim) as
// the kernel's last: one kernel where there were three, and the CPU target's results stay eager's.
TEST(Schedule, AStoredAddAndAFoldedViewJoinTheirLayerNormsRowKernel) {
  auto path = test::scripted_model("add_ln_view", R"JIT(
def forward(self, x):
    h = torch.sin(x) + x
    y = torch.layer_norm(h, [32])
    return y.view(256, 32) + h.view(256, 32)
)JIT");
  auto cm = schedule_for_gpu(path, "16x16x32");
  const auto& after = cm.stages.at("21_loops_after_fusion.txt");
  EXPECT_EQ(cm.kernels, 1u) << after;
  EXPECT_EQ(kernels_computing(cm, "h"), 1) << after;
    EXPECT_NE(after.find("rows 16,16, computes h "), std::string::npos) << after;
  const auto& decisions = cm.stages.at("22_fusion_decisions.txt");
  EXPECT_NE(decisions.find("read along its rows: the row kernel's first stage"), std::string::npos) << decisions;
  EXPECT_NE(decisions.find("same rows, folded into fewer dims: one row kernel"), std::string::npos) << decisions;
  auto cpu = test::compile_example(path, "16x16x32");
  EXPECT_LT(test::relative_error(cpu, "16x16x32"), 1e-5);
  EXPECT_NE(cpu.stages.at("21_loops_after_fusion.txt").find("rows 16,16, computes h "), std::string::npos);

  // Few rows: the stages keep kernels of their own (a row kernel would spread them over 16 warps).
  auto few = schedule_for_gpu(test::scripted_model("add_ln_view_few", R"JIT(
def forward(self, x):
    h = torch.sin(x) + x
    y = torch.layer_norm(h, [32])
    return y.view(16, 32) + h.view(16, 32)
)JIT"),
                              "2x8x32");
  EXPECT_EQ(few.kernels, 3u) << few.stages.at("21_loops_after_fusion.txt");
}

// A computation that merely comes next in program order, its sizes folding the rows but reading nothing
// of the row kernel (an attention mask after the embeddings' layer norm), keeps a kernel of its own.
TEST(Schedule, AnIndependentComputationAfterALayerNormKeepsItsOwnKernel) {
  auto cm = schedule_for_gpu(test::scripted_model("ln_then_mask", R"JIT(
def forward(self, x):
    h = torch.sin(x) + x
    y = torch.layer_norm(h, [32])
    out = y.view(256, 32) + h.view(256, 32)
    m = torch.cos(x).view(16, 1, 16, 32)
    return out, m
)JIT"),
                             "16x16x32");
  const auto& after = cm.stages.at("21_loops_after_fusion.txt");
  EXPECT_EQ(cm.kernels, 2u) << after;
  EXPECT_EQ(kernels_computing(cm, "m"), 1) << after;
  EXPECT_NE(after.find("rows 16,16, computes h y_sum y_sum_4 out\n"), std::string::npos) << after;
}

namespace {

// The miniature ConvNeXt (stem and blocks) channels-last, with generated depthwise convolutions, through the GPU's
// front end: what the two ConvNeXt tests below look at.
struct ConvNextFused {
  ConvNextFused()
      : compiled(test::compile_example(test::convnext_blocks_model(), "2x3x32x32", "kiln", "channels-last", "generated")),
        out(test::gpu_front_end(compiled)),
        decisions(fusion::decisions_text(out.fused)) {}
  test::CompiledModel compiled;
  pipeline::FrontEnd out;
  std::string decisions;
};

// The fused kernel computing computation `c`, or null.
const fusion::FusedKernel* kernel_computing(const fusion::FusedProgram& fused, int c) {
  for (const auto& k : fused.kernels)
    if (std::find(k.comps.begin(), k.comps.end(), c) != k.comps.end()) return &k;
  return nullptr;
}

}  // namespace

// ConvNeXt's stem: LayerNorm2d's layer_norm over [N, H, W, C] rows, then permute(0, 3, 1, 2), read by the first block's
// channels-last depthwise convolution and by its residual add, both channel innermost. The normalized rows are the
// stored ones (the layer norm's row kernel writes them: no kernel of its own for the permute) and the permute is read
// through; computed inside the permute instead, it was stored [N, C, H, W] and the depthwise kernel read it 56·56 floats
// apart (ConvNeXt-T, batch 8 on the H200: 0.175 ms against the other blocks' 0.023). Against eager on the CPU.
TEST(Schedule, ALayerNormPermutedForChannelsLastReadersIsStoredInItsRowKernel) {
  ConvNextFused cn;
  auto& c = cn.compiled;
  const auto& out = cn.out;
  const auto& comps = out.fused.program.comps;
  const std::string& decisions = cn.decisions;
  std::vector<std::vector<int>> users(comps.size());
  for (size_t i = 0; i < comps.size(); ++i)
    for (int d : comps[i].deps) users[static_cast<size_t>(d)].push_back(static_cast<int>(i));
  int permuted = 0;
  for (size_t v = 0; v < comps.size(); ++v) {
    if (!comps[v].is_view || comps[v].deps.size() != 1) continue;
    const int p = comps[v].deps[0];
    const auto& producer = comps[static_cast<size_t>(p)];
    bool window_reader = false;
    for (int w : users[v]) window_reader |= comps[static_cast<size_t>(w)].target == "aten::conv2d";
    if (producer.kind != lowering::Comp::Kind::Pointwise || users[static_cast<size_t>(p)].size() != 1 || !window_reader ||
        users[v].size() < 2)
      continue;
    ++permuted;
    EXPECT_TRUE(out.fused.realized[static_cast<size_t>(p)]) << producer.name << "\n" << decisions;
    EXPECT_FALSE(out.fused.realized[v]) << comps[v].name << "\n" << decisions;
    const fusion::FusedKernel* in = kernel_computing(out.fused, p);
    ASSERT_NE(in, nullptr) << producer.name;
    EXPECT_EQ(in->kind, fusion::FusedKernel::Kind::Row) << in->name << "\n" << decisions;
    for (int w : users[v]) EXPECT_EQ(comps[static_cast<size_t>(w)].layout, (std::vector<int>{0, 2, 3, 1})) << comps[w].name;
  }
  EXPECT_EQ(permuted, 1) << decisions;
  EXPECT_NE(decisions.find("only permutes it for 2 kernels that walk its memory in order through it"), std::string::npos)
      << decisions;
  EXPECT_LT(test::relative_error(c, "2x3x32x32"), 1e-4);
}

// ConvNeXt's depthwise convolution read only through permute(0, 2, 3, 1) by its layer norm's three row computations,
// through the GPU's front end (channels-last: the convolution stored NHWC, so the permute is its own bytes in its own
// order). The convolution is the stored one, in a pointwise kernel of its own (on the GPU a window's kernel, taps shared
// along rows), and the permute is read through, not copied; the decision says why. Against eager on the CPU.
TEST(Schedule, AWindowReadThroughAPermuteInItsStorageOrderIsStoredAndThePermuteReadThrough) {
  ConvNextFused cn;
  auto& c = cn.compiled;
  const auto& out = cn.out;
  const auto& comps = out.fused.program.comps;
  const std::string& decisions = cn.decisions;
  int windows = 0;
  for (size_t i = 0; i < comps.size(); ++i) {
    if (comps[i].kind != lowering::Comp::Kind::Pointwise || comps[i].target != "aten::conv2d") continue;
    ++windows;
    EXPECT_TRUE(out.fused.realized[i]) << comps[i].name << "\n" << decisions;
    EXPECT_EQ(comps[i].layout, (std::vector<int>{0, 2, 3, 1})) << comps[i].name;
    // Its one reader, the permute, is a view no kernel stores.
    for (size_t j = i + 1; j < comps.size(); ++j)
      if (comps[j].is_view && std::find(comps[j].deps.begin(), comps[j].deps.end(), static_cast<int>(i)) != comps[j].deps.end())
        EXPECT_FALSE(out.fused.realized[j]) << comps[j].name << "\n" << decisions;
    const fusion::FusedKernel* in = kernel_computing(out.fused, static_cast<int>(i));
    ASSERT_NE(in, nullptr) << comps[i].name;
    EXPECT_EQ(in->kind, fusion::FusedKernel::Kind::Pointwise) << in->name;
  }
  EXPECT_EQ(windows, 2);
  EXPECT_NE(decisions.find("only reorders it in its storage order for 3 kernels: stored here, the view read through"),
            std::string::npos)
      << decisions;
  // Without channels-last (the CPU's default) the convolution is row-major and the permute is no reordering in its
  // storage order: the permute stays the stored one, as before.
  pipeline::FrontEndOptions fe;
  fe.recompute = true;
  fe.depthwise = true;
  runtime::RegionArtifacts plain_art;
  auto plain = pipeline::run_front_end(c.rt->regions().at(0).entries.at(0).graph, fe, plain_art);
  EXPECT_EQ(fusion::decisions_text(plain.fused).find("only reorders it"), std::string::npos);
  EXPECT_LT(test::relative_error(c, "2x3x32x32"), 1e-4);
}

// ConvNeXt's downsampling: LayerNorm2d's layer_norm over [N, H, W, C] rows, then permute(0, 3, 1, 2) read only by the
// downsampling convolution (an extern), stored channels-last for it. The permute keeps every element where the
// normalized rows are stored, so the layer norm's row kernel writes its rows as its last stage and the convolution is
// called on that buffer permuted: no kernel recomputes the normalization into a copy of the same bytes (ConvNeXt-T:
// three such kernels per call). The buffer lives until the convolution has run. Against eager on the CPU, which runs
// the same view (conv layout channels-last). Row-major (the CPU's default) the permute is a reordering and stays a
// kernel of its own.
TEST(Schedule, AViewOnlyAnExternReadsInItsProducersStorageIsThatBufferPermuted) {
  auto c = test::compile_example(test::convnext_downsample_model(), "2x3x32x32", "kiln", "channels-last");
  const auto out = test::gpu_front_end(c);
  const auto& comps = out.fused.program.comps;
  const std::string decisions = fusion::decisions_text(out.fused), text = fusion::fused_program_text(out.fused);
  int views = 0;
  for (size_t v = 0; v < comps.size(); ++v) {
    const int src = fusion::view_source(out.fused, static_cast<int>(v));
    if (src < 0) continue;
    ++views;
    EXPECT_TRUE(comps[v].is_view) << comps[v].name;
    EXPECT_EQ(comps[v].layout, (std::vector<int>{0, 2, 3, 1})) << comps[v].name;
    EXPECT_EQ(kernel_computing(out.fused, static_cast<int>(v)), nullptr) << comps[v].name << "\n" << text;
    const fusion::FusedKernel* in = kernel_computing(out.fused, src);
    ASSERT_NE(in, nullptr) << comps[static_cast<size_t>(src)].name << "\n" << text;
    EXPECT_EQ(in->kind, fusion::FusedKernel::Kind::Row) << in->name << "\n" << text;
    EXPECT_NE(text.find("view " + comps[v].name + " = " + comps[static_cast<size_t>(src)].name + "'s buffer, permuted"),
              std::string::npos)
        << text;
    // The buffer outlives the convolution reading the view; the view has none of its own.
    const auto* b = out.plan.buffer_of(src);
    ASSERT_NE(b, nullptr);
    int conv_step = -1;
    for (size_t s = 0; s < out.fused.steps.size(); ++s) {
      const auto& st = out.fused.steps[s];
      if (st.kind != fusion::Step::Kind::Extern) continue;
      const auto& ops = comps[static_cast<size_t>(st.index)].operands;
      if (std::find(ops.begin(), ops.end(), static_cast<int>(v)) != ops.end()) conv_step = static_cast<int>(s);
    }
    EXPECT_GE(conv_step, 0) << text;
    EXPECT_GE(b->last, conv_step);
    EXPECT_EQ(out.plan.buffer_of(static_cast<int>(v)), nullptr);
  }
  EXPECT_EQ(views, 1) << text << decisions;
  EXPECT_NE(decisions.find("keeps its elements where its buffer does for extern calls"), std::string::npos) << decisions;
  EXPECT_NE(decisions.find("permuted (no copy)"), std::string::npos) << decisions;
  EXPECT_NE(c.stages.at("21_loops_after_fusion.txt").find("'s buffer, permuted"), std::string::npos)
      << c.stages.at("21_loops_after_fusion.txt");
  EXPECT_LT(test::relative_error(c, "2x3x32x32"), 1e-4);
  EXPECT_LT(test::relative_error(c, "1x3x20x12"), 1e-4);

  auto plain = test::compile_example(test::convnext_downsample_model(), "2x3x32x32", "kiln", "contiguous");
  EXPECT_EQ(plain.stages.at("21_loops_after_fusion.txt").find("'s buffer, permuted"), std::string::npos)
      << plain.stages.at("21_loops_after_fusion.txt");
  EXPECT_LT(test::relative_error(plain, "2x3x32x32"), 1e-4);
}
