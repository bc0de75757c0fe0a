// Buffer planning (fusion/memory_plan.h), checked on the example models: every buffer a step writes
// is planned, buffers sharing a slot never live at the same time (except a pointwise result written
// in place over an input that dies in that very kernel), region outputs are never handed on, the
// planned peak is at most every buffer at once, and the plan's dump is kept as a golden file.
#include "engine/fusion/memory_plan.h"

#include <gtest/gtest.h>

#include "engine/pipeline/front_end.h"
#include "engine/pipeline/stages.h"
#include "tests/support/compile_support.h"
#include "tests/support/scripted_models.h"

using namespace kiln;

namespace {

pipeline::FrontEnd front_end_of(const char* model, const char* input, bool channels_last = false,
                                bool gemm_epilogues = false) {
  auto cm = test::compile_example(model, input);
  auto regions = cm.rt->regions();
  runtime::RegionArtifacts art;
  pipeline::FrontEndOptions o;
  o.channels_last = channels_last;
  o.gemm_epilogues = gemm_epilogues;
  return pipeline::run_front_end(regions.at(0).entries.at(0).graph, o, art);
}

void expect_sound(const pipeline::FrontEnd& f, const std::string& what) {
  const auto& plan = f.plan;
  const int steps = static_cast<int>(plan.alloc_before.size());
  ASSERT_EQ(plan.free_after.size(), plan.alloc_before.size()) << what;
  for (const auto& b : plan.buffers) {
    EXPECT_GE(b.first, 0) << what;
    EXPECT_LE(b.first, b.last) << what << ": comp " << b.comp;
    EXPECT_GE(b.slot, 0) << what;
    EXPECT_LT(b.slot, plan.slots) << what;
    if (b.output) EXPECT_EQ(b.last, steps) << what << ": a region output outlives the region";
  }
  for (size_t i = 0; i < plan.buffers.size(); ++i)
    for (size_t j = i + 1; j < plan.buffers.size(); ++j) {
      const auto& a = plan.buffers[i];
      const auto& b = plan.buffers[j];
      if (a.slot != b.slot) continue;
      const auto& early = a.first <= b.first ? a : b;
      const auto& late = a.first <= b.first ? b : a;
      // In place: the result takes the memory of an input that dies in its kernel (the result may be
      // made one step earlier, at the extern whose epilogue the kernel is).
      const bool in_place = late.in_place_of == early.comp && early.last <= late.last && late.first <= early.last;
      EXPECT_TRUE(early.last < late.first || in_place)
          << what << ": comps " << early.comp << " [" << early.first << ".." << early.last << "] and " << late.comp
          << " [" << late.first << ".." << late.last << "] share slot " << a.slot << " while both live";
      EXPECT_FALSE(early.output) << what << ": a region output's slot was handed on";
    }
  // Each buffer is made once and given back at most once, where its lifetime says.
  std::map<int, int> made, freed;
  for (int s = 0; s < steps; ++s) {
    for (int c : plan.alloc_before[static_cast<size_t>(s)]) ++made[c];
    for (int c : plan.free_after[static_cast<size_t>(s)]) {
      ++freed[c];
      const auto* b = plan.buffer_of(c);
      ASSERT_NE(b, nullptr) << what;
      EXPECT_EQ(b->last, s) << what << ": comp " << c << " freed away from its last reader";
      EXPECT_FALSE(b->output) << what << ": a region output is given back";
    }
  }
  for (auto [c, n] : made) EXPECT_EQ(n, 1) << what << ": comp " << c;
  for (auto [c, n] : freed) EXPECT_EQ(n, 1) << what << ": comp " << c;
  // Memory is handed on only straight to the next buffer of the slot, one the runtime makes: held
  // across a step it would add to that step's peak.
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    const auto& a = plan.buffers[i];
    if (!a.handed_on) continue;
    const fusion::PlannedBuffer* next = nullptr;
    for (size_t j = i + 1; j < plan.buffers.size() && !next; ++j)
      if (plan.buffers[j].slot == a.slot) next = &plan.buffers[j];
    ASSERT_NE(next, nullptr) << what;
    EXPECT_EQ(next->first, a.last + 1) << what << ": comp " << a.comp << " held from step " << a.last;
    const auto kind = f.fused.program.comps[static_cast<size_t>(next->comp)].kind;
    EXPECT_TRUE(kind == lowering::Comp::Kind::Pointwise || kind == lowering::Comp::Kind::Reduction) << what;
  }
  auto peak = fusion::planned_peak(f.fused, plan, {});
  EXPECT_GT(peak.peak, 0) << what;
  EXPECT_LE(peak.peak, peak.unplanned) << what;
}

}  // namespace

TEST(MemoryPlan, ExamplesPlanSoundly) {
  expect_sound(front_end_of("small_mlp.pt", "4x64"), "small_mlp");
  expect_sound(front_end_of("block.pt", "2x16x64"), "block");
  expect_sound(front_end_of("tiny_resnet.pt", "2x3x16x16"), "tiny_resnet");
  expect_sound(front_end_of("tiny_resnet.pt", "2x3x16x16", true), "tiny_resnet channels-last");
  expect_sound(front_end_of("block.pt", "2x16x64", false, true), "block with GEMM epilogues");
}

TEST(MemoryPlan, AKernelAfterAnExternIsMadeEarlyOnlyWhenAGemmMayRunIt) {
  // Without GEMM epilogues every buffer is made just before the step that writes it; with them
  // (max-autotune on the GPU) a kernel right after an extern has its buffers before that extern.
  auto plain = front_end_of("block.pt", "2x16x64");
  auto early = front_end_of("block.pt", "2x16x64", false, true);
  int moved = 0;
  for (size_t s = 0; s < plain.fused.steps.size(); ++s) {
    const auto& step = plain.fused.steps[s];
    if (step.kind != fusion::Step::Kind::Kernel) continue;
    for (int c : plain.fused.kernels[static_cast<size_t>(step.index)].comps) {
      const auto* b = plain.plan.buffer_of(c);
      if (!b) continue;
      EXPECT_EQ(b->first, static_cast<int>(s)) << "comp " << c;
      const auto* e = early.plan.buffer_of(c);
      ASSERT_NE(e, nullptr);
      if (s > 0 && plain.fused.steps[s - 1].kind == fusion::Step::Kind::Extern) {
        EXPECT_EQ(e->first, static_cast<int>(s) - 1) << "comp " << c;
        ++moved;
      }
    }
  }
  EXPECT_GT(moved, 0) << "block has kernels right after its linears";
  EXPECT_LE(fusion::planned_peak(plain.fused, plain.plan, {}).peak, fusion::planned_peak(early.fused, early.plan, {}).peak);
}

TEST(MemoryPlan, ReuseLowersThePlannedPeak) {
  // A residual network's chain of equal-shaped activations: slots are shared, so fewer bytes are
  // live at the peak than if every buffer were kept.
  auto f = front_end_of("tiny_resnet.pt", "2x3x16x16");
  auto peak = fusion::planned_peak(f.fused, f.plan, {});
  EXPECT_LT(f.plan.slots, static_cast<int>(f.plan.buffers.size()));
  EXPECT_LT(peak.peak, peak.unplanned);
}

TEST(MemoryPlan, DumpedAsAStageAndGolden) {
  for (auto [name, input] : std::vector<std::pair<const char*, const char*>>{{"block.pt", "2x16x64"},
                                                                              {"tiny_resnet.pt", "2x3x16x16"}}) {
    auto cm = test::compile_example(name, input);
    const auto& text = cm.stages[pipeline::kMemoryPlan.dump_file];
    EXPECT_EQ(text.rfind("memory plan: ", 0), 0u) << text;
    auto diff = test::check_golden(std::string("memory_plan/") + name + ".txt", text);
    EXPECT_TRUE(diff.empty()) << diff;
  }
}

// A row kernel's stages write over what dies in it: a post-norm block's layer norm output, viewed
// 2-d for a product (a stage folding the rows), takes the memory of the residual sum its reductions
// read, and the softmax's output that of the product it normalizes; the plan stays sound.
TEST(MemoryPlan, ARowKernelsStagesWriteOverWhatDiesThere) {
  auto path = test::scripted_model("post_norm_plan", R"JIT(
def forward(self, x):
    h = torch.sin(x) + x
    y = torch.layer_norm(h, [32])
    z = y.view(256, 32)
    a = torch.softmax(torch.matmul(z, z[:32, :].t()) * 0.5, 1)
    return torch.matmul(a, z[:32, :])
)JIT");
  auto cm = test::compile_example(path, "16x16x32");
  runtime::RegionArtifacts art;
  pipeline::FrontEndOptions o;
  o.recompute = false;  // h gets a buffer, as on the CPU
  auto f = pipeline::run_front_end(cm.rt->regions().at(0).entries.at(0).graph, o, art);
  expect_sound(f, "post_norm_plan");
  auto comp = [&](const std::string& name) {
    for (size_t i = 0; i < f.fused.program.comps.size(); ++i)
      if (f.fused.program.comps[i].name == name) return static_cast<int>(i);
    return -1;
  };
  auto in_place_of = [&](int c) {
    const auto* b = f.plan.buffer_of(c);
    return b ? b->in_place_of : -2;
  };
  const std::string after = fusion::fused_program_text(f.fused), plan = fusion::memory_plan_text(f.fused, f.plan);
  ASSERT_GE(comp("h"), 0) << after;
  EXPECT_EQ(in_place_of(comp("z")), comp("h")) << after << plan;
  EXPECT_EQ(in_place_of(comp("a")), comp("matmul")) << after << plan;  // the scaling is inlined
  EXPECT_LT(test::relative_error(cm, "16x16x32"), 1e-5);
}
