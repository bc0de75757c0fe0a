// CUDA code generation: the generated source of every example model compiles with NVRTC for sm_90
// (no GPU needed), and the sources of the sample models are kept as golden files.
#include "engine/codegen/cuda/emit_cuda.h"

#include <gtest/gtest.h>

#include <set>

#include "engine/codegen/cuda/gemm_template.h"
#include "engine/codegen/cuda/nvrtc_compiler.h"
#include "engine/fusion/schedule.h"
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
    auto diff = test::check_golden(std::string("codegen/") + model + ".cu.txt", cuda_source(model, input));
    EXPECT_TRUE(diff.empty()) << diff;
  }
}

TEST(EmitCuda, RowKernelsUseBlockReductionsAndPointwiseKernelsVectorize) {
  std::vector<codegen::CudaKernelInfo> info;
  auto src = cuda_source("block.pt", "2x16x64", &info);
  // block.pt's rows (softmax, layer_norm) are 16 to 64 long: one warp per row, shuffles only.
  EXPECT_NE(src.find("kiln_warp_online(acc"), std::string::npos);
  EXPECT_NE(src.find("kiln_warp_welford(n"), std::string::npos);
  EXPECT_NE(src.find("__shfl_xor_sync"), std::string::npos);
  EXPECT_EQ(src.find("kiln_block_online(acc"), std::string::npos);
  EXPECT_EQ(src.find("kiln_block_welford(n"), std::string::npos);
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
  int with_variants = 0, vector_forms = 0;
  for (size_t k = 0; k < tuned.size(); ++k) {
    ASSERT_FALSE(tuned[k].variants.empty());
    EXPECT_EQ(tuned[k].variants[0].function, tuned[k].name);
    EXPECT_EQ(plain[k].variants.size(), 1u);  // no variants unless asked
    if (tuned[k].vector_width == 4) {
      ++with_variants;
      ASSERT_EQ(tuned[k].variants.size(), 3u);
      EXPECT_EQ(tuned[k].variants[1].vector_width, 2);
      EXPECT_EQ(tuned[k].variants[2].vector_width, 1);
      EXPECT_NE(src.find("void " + tuned[k].name + "_w1(const KilnArgs_" + tuned[k].name + " args)"), std::string::npos);
      EXPECT_EQ(base.find(tuned[k].name + "_w1"), std::string::npos);
      // A thread's first element sits at a multiple of its width: the vector moved is exactly that
      // wide (a float4 at a multiple of 2 is a misaligned address on the device), the alignment
      // checked is the vector's size, and one element per thread moves no vectors at all.
      auto body = [&](const std::string& fn) {
        size_t at = src.find("void " + fn + "(const KilnArgs_" + tuned[k].name + " args)");
        EXPECT_NE(at, std::string::npos) << fn;
        return at == std::string::npos ? std::string() : src.substr(at, src.find("\n}\n", at) - at);
      };
      const std::string w4 = body(tuned[k].name), w2 = body(tuned[k].name + "_w2"), w1 = body(tuned[k].name + "_w1");
      if (w4.find("float4") != std::string::npos) {
        EXPECT_NE(w4.find("& 15ULL) == 0"), std::string::npos);
        EXPECT_EQ(w2.find("float4"), std::string::npos) << w2;
        EXPECT_NE(w2.find("float2"), std::string::npos) << w2;
        EXPECT_NE(w2.find("& 7ULL) == 0"), std::string::npos) << w2;
        ++vector_forms;
      }
      EXPECT_EQ(w1.find("float4"), std::string::npos);
      EXPECT_EQ(w1.find("float2"), std::string::npos);
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
  EXPECT_GT(vector_forms, 0);
  auto bin = codegen::compile_cuda(src, "sm_90");
  EXPECT_GT(bin.cubin.size(), 0u);
}

namespace {

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

fusion::FusedProgram block_program() {
  auto cm = test::compile_example("block.pt", "2x16x64", "eager");
  auto regions = cm.rt->regions();  // by value
  return fusion::schedule(lowering::lower_graph(regions.at(0).entries.at(0).graph).program);
}

int comp_named(const fusion::FusedProgram& p, const std::string& name) {
  for (size_t c = 0; c < p.program.comps.size(); ++c)
    if (p.program.comps[c].name == name) return static_cast<int>(c);
  ADD_FAILURE() << "no computation " << name;
  return 0;
}

}  // namespace

// softmax's max and sum, and each layer_norm's mean and variance, are one loop over the row in both
// row mappings: the reductions of block.pt are never computed one loop each.
TEST(EmitCuda, SoftmaxAndLayerNormReduceInOnePass) {
  auto fused = block_program();
  auto src = codegen::emit_cuda(fused);
  EXPECT_EQ(count(src, "    // online softmax: max and sum in one pass\n"), 1);
  EXPECT_EQ(count(src, "    // welford: mean and variance in one pass\n"), 2);
  EXPECT_EQ(count(src, "kiln_warp_online(acc27, acc28);"), 1);
  EXPECT_EQ(count(src, "kiln_welford_add(n"), 2);
  EXPECT_EQ(count(src, "kiln_warp_max(acc"), 0);
  EXPECT_EQ(count(src, "kiln_warp_sum(acc"), 0);
  EXPECT_EQ(count(src, "for (long long r = "), 3);  // one reduction loop per row kernel

  std::vector<codegen::CudaKernelInfo> info;
  auto tuned = codegen::emit_cuda(fused, {}, &info, /*variants=*/true);
  for (const auto& k : info) {
    if (!k.row) continue;
    ASSERT_EQ(k.variants.size(), 2u) << k.name;
    // The autotuning candidate with one block per row: the same forms with block-wide merges.
    const size_t at = tuned.find("void " + k.name + "_block(const KilnArgs_" + k.name + " args)");
    ASSERT_NE(at, std::string::npos) << k.name;
    const std::string body = tuned.substr(at, tuned.find("\n}\n", at) - at);
    if (k.name.find("softmax") != std::string::npos) {
      EXPECT_NE(body.find("// online softmax: max and sum in one pass"), std::string::npos) << body;
      EXPECT_NE(body.find("kiln_block_online(acc27, acc28, smem);"), std::string::npos) << body;
      EXPECT_NE(body.find("__shared__ float smem[66];"), std::string::npos) << body;  // a (max, sum) pair per warp
    } else {
      EXPECT_NE(body.find("// welford: mean and variance in one pass"), std::string::npos) << body;
      EXPECT_NE(body.find("kiln_block_welford(n"), std::string::npos) << body;
      EXPECT_NE(body.find("__shared__ float smem[99];"), std::string::npos) << body;  // (count, mean, M2)
    }
    EXPECT_EQ(count(body, "for (long long r = "), 1) << body;
  }
  auto bin = codegen::compile_cuda(tuned, "sm_90");
  EXPECT_GT(bin.cubin.size(), 0u);
}

// Reductions that only look like softmax or a variance keep their own loops, and a variance
// written with pow is recognized as one.
TEST(EmitCuda, OnePassFormsNeedTheExactPattern) {
  using lowering::ve_binary;
  using lowering::ve_const;
  using lowering::ve_unary;
  const auto base = block_program();
  const int att_max = comp_named(base, "att_max"), att_sum = comp_named(base, "att_sum");
  const int mean = comp_named(base, "layer_norm_sum"), var = comp_named(base, "layer_norm_sum_12");
  const auto& sum_body = base.program.comps[att_sum].body;     // exp(sub(E, att_max[row]))
  const auto& var_body = base.program.comps[var].body;         // mul(sub(E, mean[row]), sub(E, mean[row]))
  const auto& centered = var_body->a;
  ASSERT_EQ(sum_body->fn, "exp");
  ASSERT_EQ(var_body->fn, "mul");

  {  // sum(exp(2 * E - max)): E differs from what the max reduces
    auto p = base;
    p.program.comps[att_sum].body =
        ve_unary("exp", ve_binary("sub", ve_binary("mul", sum_body->a->a, ve_const(2.0)), sum_body->a->b));
    auto src = codegen::emit_cuda(p);
    EXPECT_EQ(count(src, "// online softmax"), 0);
    EXPECT_EQ(count(src, "kiln_warp_max(acc" + std::to_string(att_max) + ")"), 1);
    EXPECT_EQ(count(src, "kiln_warp_sum(acc" + std::to_string(att_sum) + ")"), 1);
    EXPECT_EQ(count(src, "// welford"), 2);
  }
  {  // sum(exp(E - max)) + 1: the sum's body is no longer exp(E - max)
    auto p = base;
    p.program.comps[att_sum].body = ve_binary("add", sum_body, ve_const(1.0));
    EXPECT_EQ(count(codegen::emit_cuda(p), "// online softmax"), 0);
  }
  {  // a plain sum instead of the mean: not the mean that the variance centres on
    auto p = base;
    p.program.comps[mean].post_div_sizes.clear();
    auto src = codegen::emit_cuda(p);
    EXPECT_EQ(count(src, "// welford"), 1);
    EXPECT_EQ(count(src, "kiln_warp_sum(acc" + std::to_string(mean) + ")"), 1);
  }
  {  // (E - mean) * (E - mean + 1): not a square
    auto p = base;
    p.program.comps[var].body = ve_binary("mul", centered, ve_binary("add", centered, ve_const(1.0)));
    EXPECT_EQ(count(codegen::emit_cuda(p), "// welford"), 1);
  }
  {  // pow(E - mean, 3): not a square
    auto p = base;
    p.program.comps[var].body = ve_binary("pow", centered, ve_const(3.0));
    EXPECT_EQ(count(codegen::emit_cuda(p), "// welford"), 1);
  }
  {  // pow(E - mean, 2) is the same variance: the same kernels
    auto p = base;
    p.program.comps[var].body = ve_binary("pow", centered, ve_const(2.0));
    EXPECT_EQ(codegen::emit_cuda(p), codegen::emit_cuda(base));
  }
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


// Each kernel's argument block carries only the buffers it reads or writes (a launch copies the
// whole block: a region's every pointer in each would make launches of large regions carry
// kilobytes), in the order CudaKernelInfo::buffers gives the runtime.
TEST(EmitCuda, EachKernelTakesOnlyItsOwnBuffers) {
  auto cm = test::compile_example("block.pt", "2x16x64", "eager");
  auto lowered = lowering::lower_graph(cm.rt->regions().at(0).entries.at(0).graph);
  auto fused = fusion::schedule(lowered.program);
  std::vector<codegen::CudaKernelInfo> info;
  auto src = codegen::emit_cuda(fused, {}, &info);
  ASSERT_FALSE(info.empty());
  for (size_t k = 0; k < info.size(); ++k) {
    const auto& ki = info[k];
    std::set<int> expected(fused.kernels[k].comps.begin(), fused.kernels[k].comps.end());
    for (int c : fused.kernels[k].comps) lowering::collect_loads(fused.program.comps[c].body, expected);
    for (auto it = expected.begin(); it != expected.end();) it = fused.realized[*it] ? std::next(it) : expected.erase(it);
    EXPECT_EQ(std::set<int>(ki.buffers.begin(), ki.buffers.end()), expected) << ki.name;
    EXPECT_EQ(ki.buffers.size(), std::set<int>(ki.buffers.begin(), ki.buffers.end()).size()) << ki.name;
    const std::string block = "struct KilnArgs_" + ki.name + " {\n  void* buf[" + std::to_string(ki.buffers.size()) + "];";
    EXPECT_NE(src.find(block), std::string::npos) << ki.name;
    // Every buffer it declares is read from its own block, by position.
    const std::string body = src.substr(ki.source_begin, ki.function_end - ki.source_begin);
    for (size_t i = 0; i < ki.buffers.size(); ++i)
      EXPECT_NE(body.find("* __restrict__ b" + std::to_string(ki.buffers[i]) + " = static_cast<"), std::string::npos);
    for (size_t i = 0; i < ki.buffers.size(); ++i)
      EXPECT_NE(body.find("(args.buf[" + std::to_string(i) + "]);"), std::string::npos) << ki.name << " " << i;
    EXPECT_EQ(body.find("(args.buf[" + std::to_string(ki.buffers.size()) + "]);"), std::string::npos) << ki.name;
  }
}
