// CUDA code generation: the generated source of every example model compiles with NVRTC for sm_90
// (no GPU needed), and the sources of the sample models are kept as golden files.
#include "engine/codegen/cuda/emit_cuda.h"

#include <gtest/gtest.h>

#include "engine/codegen/cuda/gemm_template.h"
#include "engine/codegen/cuda/nvrtc_compiler.h"
#include "engine/lowering/lower_graph.h"
#include "tests/support/compile_support.h"

using namespace kiln;

namespace {

std::string cuda_source(const char* model, const char* input, std::vector<codegen::CudaKernelInfo>* info = nullptr) {
  auto cm = test::compile_example(model, input, "eager");
  std::string src;
  for (const auto& region : cm.rt->regions())
    for (const auto& e : region.entries) {
      auto lowered = lowering::lower_graph(e.graph);
      auto fused = fusion::schedule(lowered.program);
      src += codegen::emit_cuda(fused, {}, info);
    }
  return src;
}

}  // namespace

TEST(EmitCuda, EveryExampleCompilesWithNvrtc) {
  for (auto [model, input] : std::vector<std::pair<const char*, const char*>>{
           {"small_mlp.pt", "4x64"}, {"small_mlp_traced.pt", "4x64"}, {"gate.pt", "4x64"}, {"breaky.pt", "4x64"},
           {"block.pt", "2x16x64"}, {"tiny_resnet.pt", "2x3x16x16"}, {"shape_branch.pt", "8x16"}}) {
    auto cm = test::compile_example(model, input, "eager");
    for (const auto& region : cm.rt->regions())
      for (const auto& e : region.entries) {
        auto fused = fusion::schedule(lowering::lower_graph(e.graph).program);
        auto src = codegen::emit_cuda(fused);
        try {
          auto bin = codegen::compile_cuda(src, "sm_90");
          EXPECT_GT(bin.cubin.size(), 0u) << model;
        } catch (const std::exception& ex) {
          ADD_FAILURE() << model << ": " << ex.what() << "\n" << src;
        }
      }
  }
}

TEST(EmitCuda, GoldenSources) {
  for (auto [model, input] : std::vector<std::pair<const char*, const char*>>{{"small_mlp.pt", "4x64"},
                                                                              {"block.pt", "2x16x64"}}) {
    auto diff = test::check_golden(std::string("codegen/") + model + ".cu", cuda_source(model, input));
    EXPECT_TRUE(diff.empty()) << diff;
  }
}

TEST(EmitCuda, RowKernelsUseBlockReductionsAndPointwiseKernelsVectorize) {
  std::vector<codegen::CudaKernelInfo> info;
  auto src = cuda_source("block.pt", "2x16x64", &info);
  // block.pt's rows (softmax, layer_norm) are 16 to 64 long: one warp per row, shuffles only.
  EXPECT_NE(src.find("kiln_warp_max(acc"), std::string::npos);
  EXPECT_NE(src.find("__shfl_xor_sync"), std::string::npos);
  EXPECT_EQ(src.find("kiln_block_max(acc"), std::string::npos);
  int rows = 0, vec4 = 0;
  for (const auto& k : info) {
    rows += k.row;
    vec4 += k.vector_width == 4;
  }
  EXPECT_EQ(rows, 3);  // two layer_norms and the softmax
  EXPECT_GE(vec4, 1);
}

TEST(EmitCuda, AutotuneVariantsComeWithTwoAndOneElementsPerThreadAndCompile) {
  auto cm = test::compile_example("block.pt", "2x16x64", "eager");
  auto regions = cm.rt->regions();  // by value
  const auto& e = regions.at(0).entries.at(0);
  auto fused = fusion::schedule(lowering::lower_graph(e.graph).program);
  std::vector<codegen::CudaKernelInfo> plain, tuned;
  auto base = codegen::emit_cuda(fused, {}, &plain);
  auto src = codegen::emit_cuda(fused, {}, &tuned, /*variants=*/true);
  ASSERT_EQ(plain.size(), tuned.size());
  int with_variants = 0;
  for (size_t k = 0; k < tuned.size(); ++k) {
    ASSERT_FALSE(tuned[k].variants.empty());
    EXPECT_EQ(tuned[k].variants[0].function, tuned[k].name);
    EXPECT_EQ(plain[k].variants.size(), 1u);  // no variants unless asked
    if (tuned[k].vector_width == 4) {
      ++with_variants;
      ASSERT_EQ(tuned[k].variants.size(), 3u);
      EXPECT_EQ(tuned[k].variants[1].vector_width, 2);
      EXPECT_EQ(tuned[k].variants[2].vector_width, 1);
      EXPECT_NE(src.find("void " + tuned[k].name + "_w1(const KilnArgs args)"), std::string::npos);
      EXPECT_EQ(base.find(tuned[k].name + "_w1"), std::string::npos);
    } else if (tuned[k].row) {
      // The other row mapping: a whole block per row, with block reductions.
      ASSERT_EQ(tuned[k].variants.size(), 2u) << tuned[k].name;
      EXPECT_TRUE(tuned[k].variants[0].warp_per_row);
      EXPECT_FALSE(tuned[k].variants[1].warp_per_row);
      EXPECT_EQ(tuned[k].variants[1].function, tuned[k].name + "_block");
      EXPECT_NE(src.find("kiln_block_"), std::string::npos);
    } else {
      EXPECT_EQ(tuned[k].variants.size(), 1u) << tuned[k].name;
    }
  }
  EXPECT_GT(with_variants, 0);
  auto bin = codegen::compile_cuda(src, "sm_90");
  EXPECT_GT(bin.cubin.size(), 0u);
}

TEST(GemmTemplate, EveryTileConfigCompilesForSm90WithTensorCoreInstructions) {
  for (auto cfg : {codegen::GemmConfig{64, 64}, codegen::GemmConfig{128, 64}, codegen::GemmConfig{64, 128},
                   codegen::GemmConfig{128, 128}}) {
    auto src = codegen::gemm_tf32_source(cfg);
    EXPECT_NE(src.find("void __launch_bounds__(128) " + codegen::gemm_name(cfg) + "("), std::string::npos);
    EXPECT_NE(src.find("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"), std::string::npos);
    EXPECT_NE(src.find("g.bias[gc]"), std::string::npos);  // the bias is the fused epilogue
    auto bin = codegen::compile_cuda(src, "sm_90");
    EXPECT_GT(bin.cubin.size(), 0u) << codegen::gemm_name(cfg);
  }
}
