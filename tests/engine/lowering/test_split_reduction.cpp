// Long reductions over few channels-last rows split in two (lowering/split_reduction.h): the IR before and after,
// which reductions are left alone, and the compiled result against eager on the CPU ("on" splits there too).
#include <gtest/gtest.h>
#include "kiln_build_config.h"

#include <torch/script.h>

#include "engine/codegen/cuda/emit_cuda.h"
#include "engine/codegen/cuda/nvrtc_compiler.h"
#include "engine/lowering/channels_last.h"
#include "engine/pipeline/front_end.h"
#include "engine/lowering/lower_graph.h"
#include "engine/lowering/split_reduction.h"
#include "engine/runtime/captured_runtime.h"
#include "tests/support/compile_support.h"
#include "tests/support/paths.h"

using namespace kiln;

namespace {

// A 1x1 convolution to `channels` channels (so that the layout pass stores it channels-last), then its mean and
// its max over H x W (SE's pooling, and a global max), and a sum over the channels (its rows are not neighbours).
std::string pooling_model(int64_t channels) {
  torch::jit::Module m("pools");
  m.register_parameter("w", torch::randn({channels, 3, 1, 1}), false);
  m.define(R"JIT(
def forward(self, x):
    y = torch.conv2d(x, self.w, None, [1, 1], [0, 0], [1, 1], 1)
    p = torch.adaptive_avg_pool2d(torch.relu(y), [1, 1])
    q = torch.amax(y, [2, 3], True)
    s = torch.sum(y, [1], True)
    return p + q + torch.mean(s)
)JIT");
  const std::string path = test::temp_dir() + "/pools_" + std::to_string(channels) + ".pt";
  m.save(path);
  return path;
}

lowering::LoweredRegion channels_last_region(test::CompiledModel& c) {
  auto region = lowering::lower_graph(c.rt->regions().at(0).entries.at(0).graph);
  lowering::choose_channels_last(region.program, true);
  return region;
}

int reductions(const lowering::LoopProgram& p) {
  int n = 0;
  for (const auto& comp : p.comps) n += comp.kind == lowering::Comp::Kind::Reduction;
  return n;
}

}  // namespace

TEST(SplitReduction, FewLongChannelsLastRowsSumTheirPartsFirst) {
  // 4 x 64 rows of 112 x 112: 256 rows (efficientnet_b0's first pooling at batch 8), 56 parts of 2 x 112 each (14336
  // rows of 224, the fewest parts giving 8192 rows); the mean and the max split, the
  // channel sum (row-major rows of 64, not neighbours) and the final mean (one row) do not.
  auto c = test::compile_example(pooling_model(64), "4x3x112x112", "kiln", "channels-last", "auto", "off");
  auto region = channels_last_region(c);
  const auto before = region.program;
  const int count = reductions(before);
  const auto notes = lowering::split_long_reductions(region);
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_EQ(reductions(region.program), count + 2);
  EXPECT_TRUE(lowering::verify(region.program).empty()) << lowering::verify(region.program).front();
  EXPECT_NE(notes[0].find("(256 rows of 12544 values) sums 56 parts of each row"), std::string::npos) << notes[0];
  EXPECT_NE(notes[0].find("(14336 rows of 224)"), std::string::npos) << notes[0];
  int split = 0;
  for (size_t i = 0; i + 1 < region.program.comps.size(); ++i) {
    const auto& parts = region.program.comps[i];
    const auto& whole = region.program.comps[i + 1];
    if (parts.name != whole.name + "_parts") continue;
    ++split;
    // The parts: [56, 4, 64] over [2, 112] in float32; the whole: the same op over the 56 parts of its row, its mean
    // still divided by 112 x 112.
    ASSERT_EQ(parts.sizes.size(), 3u);
    EXPECT_EQ(parts.sizes[0]->value, 56);
    EXPECT_EQ(parts.sizes[2]->value, 64);
    EXPECT_EQ(parts.reduce_sizes[0]->value, 2);
    EXPECT_EQ(parts.reduce_sizes[1]->value, 112);
    EXPECT_EQ(parts.dtype, ir::DType::Float32);
    EXPECT_EQ(parts.reduce_op, whole.reduce_op);
    EXPECT_TRUE(parts.post_div_sizes.empty());
    ASSERT_EQ(whole.reduce_sizes.size(), 1u);
    EXPECT_EQ(whole.reduce_sizes[0]->value, 56);
    EXPECT_EQ(whole.deps, std::vector<int>{static_cast<int>(i)});
    std::vector<std::string> names;
    for (const auto& comp : region.program.comps) names.push_back(comp.name);
    const std::string text = lowering::ve_str(parts.body, names);
    EXPECT_NE(text.find("[i1, i2, (i0*2 + i3), i4]"), std::string::npos) << text;  // part i0 of the rows
    if (whole.reduce_op == "sum") EXPECT_EQ(whole.post_div_sizes.size(), 2u);  // the mean's 112 x 112
  }
  EXPECT_EQ(split, 2);
  // Every comp after the first parts still reads what it read: outputs and names in the same order, one on.
  ASSERT_EQ(region.program.outputs.size(), before.outputs.size());
  for (size_t o = 0; o < before.outputs.size(); ++o)
    EXPECT_EQ(region.program.comps[region.program.outputs[o]].name, before.comps[before.outputs[o]].name);
  for (const auto& [value, comp] : region.tensor_of)
    EXPECT_EQ(region.program.comps[comp].name.find("_parts"), std::string::npos) << value;
}

TEST(SplitReduction, ShortRowsManyRowsRowMajorRowsAndIntegersStayOnePass) {
  for (const auto& [channels, input] : std::vector<std::pair<int64_t, const char*>>{
           {8, "2x3x112x112"},      // 16 rows of 12544: 200k values, too few to pay for a second launch
           {1024, "2x3x112x112"},   // 2048 rows: enough to fill the GPU already
           {576, "2x3x56x56"},      // 1152 rows of 3136 (efficientnet_b0's third pooling): faster unsplit
           {64, "2x3x32x32"}}) {    // rows of 1024 values
    SCOPED_TRACE(input + std::string(" ") + std::to_string(channels));
    auto c = test::compile_example(pooling_model(channels), input, "kiln", "channels-last", "auto", "off");
    auto region = channels_last_region(c);
    EXPECT_TRUE(lowering::split_long_reductions(region).empty());
  }
  // An integer sum (counts of positive values) over the same rows: LibTorch's (lowering leaves integer reductions to
  // it), and the float32 reduction lowering tried first, which nothing reads, is not split either.
  torch::jit::Module m("int_pool");
  m.register_parameter("w", torch::randn({64, 3, 1, 1}), false);
  m.define(R"JIT(
def forward(self, x):
    y = torch.conv2d(x, self.w, None, [1, 1], [0, 0], [1, 1], 1)
    return torch.sum((y > 0).int(), [2, 3], True)
)JIT");
  const std::string counts = test::temp_dir() + "/int_pool.pt";
  m.save(counts);
  auto ints = test::compile_example(counts, "4x3x112x112", "kiln", "channels-last", "auto", "off");
  auto int_region = channels_last_region(ints);
  EXPECT_TRUE(lowering::split_long_reductions(int_region).empty());
  auto ints_on = test::compile_example(counts, "4x3x112x112", "kiln", "channels-last", "auto", "on");
  EXPECT_EQ(test::relative_error(ints_on, "4x3x112x112"), 0.0);
  // Row-major (no channels-last pass): each row is contiguous, one block per row reads it whole.
  auto c = test::compile_example(pooling_model(64), "2x3x112x112", "kiln", "contiguous", "auto", "off");
  auto region = lowering::lower_graph(c.rt->regions().at(0).entries.at(0).graph);
  EXPECT_TRUE(lowering::split_long_reductions(region).empty());
}

TEST(SplitReduction, TheSplitProgramMatchesEagerOnTheCpu) {
  // Float32 sums of 12544 values in 56 parts against LibTorch's order: 1e-5 of the largest value.
  auto c = test::compile_example(pooling_model(64), "2x3x112x112", "kiln", "channels-last", "auto", "on");
  EXPECT_NE(c.stages["20_loops_before_fusion.txt"].find("# split reduction: "), std::string::npos);
  EXPECT_LT(test::relative_error(c, "2x3x112x112"), 1e-5);
  auto off = test::compile_example(pooling_model(64), "2x3x112x112", "kiln", "channels-last", "auto", "off");
  EXPECT_EQ(off.stages["20_loops_before_fusion.txt"].find("# split reduction: "), std::string::npos);
}

#if KILN_WITH_CUDA  // the CUDA code generator is built with the CUDA toolkit only
TEST(SplitReduction, ThePartsRunInRowTilesOnTheGpu) {
  // Through the GPU's front end, 2 x 64 rows of 112 x 112 (too few rows for 8192 in parts of 128 values or more:
  // the most parts, 56): the parts (7168 rows of 224 neighbouring values) run in tiles of 32 rows, the whole (128
  // rows of 56 parts) one warp per row, and NVRTC compiles both.
  auto c = test::compile_example(pooling_model(64), "2x3x112x112", "kiln", "channels-last", "auto", "off");
  pipeline::FrontEndOptions fe;
  fe.channels_last = true;
  fe.recompute = true;
  fe.split_reductions = true;
  runtime::RegionArtifacts art;
  auto out = pipeline::run_front_end(c.rt->regions().at(0).entries.at(0).graph, fe, art);
  std::vector<codegen::CudaKernelInfo> info;
  const std::string src = codegen::emit_cuda(out.fused, {}, &info, false);
  int parts = 0, wholes = 0;
  for (size_t k = 0; k < info.size(); ++k) {
    const auto& kernel = out.fused.kernels[k];
    bool has_parts = false, reads_parts = false;
    for (int comp : kernel.comps) {
      const auto& cp = out.fused.program.comps[static_cast<size_t>(comp)];
      has_parts |= cp.name.size() > 6 && cp.name.substr(cp.name.size() - 6) == "_parts";
      for (int d : cp.deps) {
        const auto& dep = out.fused.program.comps[static_cast<size_t>(d)].name;
        reads_parts |= dep.size() > 6 && dep.substr(dep.size() - 6) == "_parts";
      }
    }
    if (has_parts) {
      ++parts;
      EXPECT_EQ(info[k].variants.at(0).row_tile, 32) << info[k].name;
    } else if (reads_parts) {
      ++wholes;
      EXPECT_TRUE(info[k].variants.at(0).warp_per_row) << info[k].name;
    }
  }
  EXPECT_EQ(parts, 2);
  EXPECT_EQ(wholes, 2);
  EXPECT_GT(codegen::compile_cuda(src, "sm_90").cubin.size(), 0u);
}
#endif
