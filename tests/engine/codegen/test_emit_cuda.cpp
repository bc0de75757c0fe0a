// CUDA code generation: the generated source of every example model compiles with NVRTC for sm_90
// (no GPU needed), and the sources of the sample models are kept as golden files.
#include "engine/codegen/cuda/emit_cuda.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <regex>
#include <set>

#include "engine/base/error.h"
#include "engine/codegen/cuda/gemm_template.h"
#include "engine/codegen/cuda/nvrtc_compiler.h"
#include "engine/fusion/schedule.h"
#include "engine/lowering/lower_graph.h"
#include "tests/support/compile_support.h"
#include "tests/support/scripted_models.h"

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

// Each kernel's text is written on a thread of its own (emit_kernel) and the texts joined in the program's order:
// the source, every kernel's place in it and its units are the same on one thread as on several, with the
// autotuning forms too, and a kernel's text does not depend on the kernels before it (its temporaries are its own).
TEST(EmitCuda, KernelsWrittenOnSeveralThreadsGiveTheSameSource) {
  auto cm = test::compile_example("block.pt", "2x16x64", "eager");
  ASSERT_FALSE(cm.rt->regions().empty());
  auto fused = fusion::schedule(lowering::lower_graph(cm.rt->regions()[0].entries.at(0).graph).program);
  ASSERT_GE(fused.kernels.size(), 4u);
  auto emit = [&](const char* threads, bool variants, std::vector<codegen::CudaKernelInfo>& info) {
    setenv("KILN_EMIT_THREADS", threads, 1);
    std::string src = codegen::emit_cuda(fused, {}, &info, variants);
    unsetenv("KILN_EMIT_THREADS");
    return src;
  };
  for (bool variants : {false, true}) {
    std::vector<codegen::CudaKernelInfo> one, many;
    const std::string serial = emit("1", variants, one), parallel = emit("4", variants, many);
    EXPECT_EQ(serial, parallel);
    ASSERT_EQ(one.size(), fused.kernels.size());
    ASSERT_EQ(many.size(), one.size());
    for (size_t i = 0; i < one.size(); ++i) {
      EXPECT_EQ(many[i].name, fused.kernels[i].name);
      EXPECT_EQ(many[i].source_begin, one[i].source_begin) << one[i].name;
      EXPECT_EQ(many[i].source_end, one[i].source_end) << one[i].name;
      EXPECT_EQ(many[i].function_end, one[i].function_end) << one[i].name;
      EXPECT_EQ(many[i].prelude_end, one[i].prelude_end) << one[i].name;
      EXPECT_EQ(many[i].variants.size(), one[i].variants.size()) << one[i].name;
      if (i > 0) EXPECT_EQ(one[i].source_begin, one[i - 1].source_end) << "kernels follow one another";
      // The kernel's text starts with its own comment and holds its function.
      const std::string text = serial.substr(one[i].source_begin, one[i].source_end - one[i].source_begin);
      EXPECT_EQ(text.rfind("// " + fused.kernels[i].name + ":", 0), 0u) << text.substr(0, 80);
      EXPECT_NE(text.find("void " + fused.kernels[i].name + "("), std::string::npos);
    }
    EXPECT_EQ(codegen::cuda_units(serial, one), codegen::cuda_units(parallel, many));
  }
  // A kernel's temporaries are numbered from t0 in each kernel: the last kernel's text alone names no temporary
  // beyond those it declares.
  std::vector<codegen::CudaKernelInfo> info;
  const std::string src = emit("3", false, info);
  for (const auto& k : info) {
    const std::string text = src.substr(k.source_begin, k.source_end - k.source_begin);
    std::set<int> declared, used;
    const std::regex decl("const auto t([0-9]+) = "), any("\\bt([0-9]+)\\b");
    for (auto it = std::sregex_iterator(text.begin(), text.end(), decl); it != std::sregex_iterator(); ++it)
      declared.insert(std::stoi((*it)[1]));
    for (auto it = std::sregex_iterator(text.begin(), text.end(), any); it != std::sregex_iterator(); ++it)
      used.insert(std::stoi((*it)[1]));
    EXPECT_EQ(used, declared) << k.name;
    if (!declared.empty()) EXPECT_EQ(*declared.begin(), 0) << k.name << ": its first temporary is t0";
  }
}

TEST(EmitCuda, RowKernelsUseBlockReductionsAndPointwiseKernelsVectorize) {
  std::vector<codegen::CudaKernelInfo> info;
  auto src = cuda_source("block.pt", "2x16x64", &info);
  // block.pt's rows (softmax, layer_norm) are 16 to 64 long: one warp per row, the row held in
  // registers, shuffles only.
  EXPECT_NE(src.find("acc27 = kiln_warp_max(acc27);"), std::string::npos);
  EXPECT_NE(src.find("acc28 = kiln_warp_sum(acc28);"), std::string::npos);
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

namespace {

// The body of each `_block` autotuning candidate (one block per row) of p, concatenated.
std::string block_forms(const fusion::FusedProgram& p) {
  std::vector<codegen::CudaKernelInfo> info;
  auto src = codegen::emit_cuda(p, {}, &info, /*variants=*/true);
  std::string out;
  for (const auto& k : info) {
    const size_t at = src.find("void " + k.name + "_block(const KilnArgs_" + k.name + " args)");
    if (at != std::string::npos) out += src.substr(at, src.find("\n}\n", at) - at) + "\n";
  }
  return out;
}

}  // namespace

// By default block.pt's rows run a warp each with the row in registers: each value a reduction
// reads comes from memory once per row, and every loop over the row (the reductions one loop each,
// then the normalized output) reads the registers.
TEST(EmitCuda, WarpRowsReadTheRowOnceIntoRegisters) {
  auto fused = block_program();
  std::vector<codegen::CudaKernelInfo> info;
  auto src = codegen::emit_cuda(fused, {}, &info);
  int rows = 0;
  for (const auto& k : info) {
    if (!k.row) continue;
    ++rows;
    const size_t at = src.find("void " + k.name + "(const KilnArgs_" + k.name + " args)");
    ASSERT_NE(at, std::string::npos) << k.name;
    const std::string body = src.substr(at, src.find("\n}\n", at) - at);
    EXPECT_EQ(count(body, "// the row in registers"), 1) << body;
    EXPECT_EQ(count(body, "rv0[j] = "), 1) << body;  // one load of the row's input per row
    // the input (the first buffer, x or the scores) is read nowhere else
    const std::string input = body.substr(body.find("__restrict__ ") + 13, body.find(" = static_cast") - body.find("__restrict__ ") - 13);
    EXPECT_EQ(count(body, input + "["), 1) << input << "\n" << body;
    EXPECT_EQ(count(body, "kiln_welford_add("), 0) << body;
    EXPECT_EQ(count(body, "kiln_online_add("), 0) << body;
    EXPECT_EQ(count(body, "#pragma unroll\n    for (int j = 0; j < "), 4) << body;  // the loads, two reductions, the output
  }
  EXPECT_EQ(rows, 3);
  auto bin = codegen::compile_cuda(src, "sm_90");
  EXPECT_GT(bin.cubin.size(), 0u);
}

// A value read only inside a where's branch is not read ahead for every element (the branch may
// not be readable where it is not taken): such a row keeps reading memory, in the one-pass form.
TEST(EmitCuda, ValuesInsideAWhereBranchAreNotHeld) {
  using lowering::ve_binary;
  using lowering::ve_const;
  using lowering::ve_where;
  auto p = block_program();
  const int mean = comp_named(p, "layer_norm_sum"), var = comp_named(p, "layer_norm_sum_12");
  // E becomes where(E > 0, E, 0) in both the mean and the variance: the loads sit in a branch only
  // (the condition reads E too, so keep it load-free: 1 > 0).
  const auto e = p.program.comps[mean].body;
  const auto guarded = ve_where(ve_binary("gt", ve_const(1.0), ve_const(0.0)), e, ve_const(0.0));
  p.program.comps[mean].body = guarded;
  const auto& centered = p.program.comps[var].body->a;  // E - mean[row]
  p.program.comps[var].body = ve_binary("mul", ve_binary("sub", guarded, centered->b), ve_binary("sub", guarded, centered->b));
  std::vector<codegen::CudaKernelInfo> info;
  auto src = codegen::emit_cuda(p, {}, &info);
  EXPECT_EQ(count(src, "// the row in registers"), 2);  // the softmax and the other layer_norm
  EXPECT_EQ(count(src, "// welford: mean and variance in one pass"), 1);
  auto bin = codegen::compile_cuda(src, "sm_90");
  EXPECT_GT(bin.cubin.size(), 0u);
}

// 16-bit float buffers move as vectors too: 4 elements as one 8-byte uint2 (2 as one 4-byte
// unsigned in the width-2 candidates), read and written through their bits, each aligned to its
// own vector's size; mixed with float32 buffers, each moves as its own type.
TEST(EmitCuda, SixteenBitBuffersMoveAsVectorsToo) {
  for (auto dtype : {ir::DType::BFloat16, ir::DType::Float16}) {
    auto p = block_program();
    for (auto& c : p.program.comps)
      if (c.dtype == ir::DType::Float32) c.dtype = dtype;
    const std::string t = dtype == ir::DType::BFloat16 ? "kiln_bf16" : "kiln_half";
    std::vector<codegen::CudaKernelInfo> info;
    auto src = codegen::emit_cuda(p, {}, &info, /*variants=*/true);
    EXPECT_GT(count(src, "const uint2 v"), 0);
    EXPECT_GT(count(src, "& 7ULL) == 0;  // every vector buffer 8-byte aligned"), 0);
    EXPECT_GT(count(src, "static_cast<float>(reinterpret_cast<const " + t + "*>(&v"), 0);
    EXPECT_GT(count(src, "*reinterpret_cast<uint2*>(b"), 0);
    EXPECT_GT(count(src, "const unsigned v"), 0);  // the width-2 candidates
    EXPECT_GT(count(src, "& 3ULL) == 0;  // every vector buffer 4-byte aligned"), 0);
    EXPECT_EQ(count(src, "float4"), 0);
    auto bin = codegen::compile_cuda(src, "sm_90");
    EXPECT_GT(bin.cubin.size(), 0u);
  }
  {  // one 16-bit output among float32 buffers: each aligned to its own vector
    const auto base = block_program();
    bool mixed = false;
    for (const auto& k : base.kernels) {
      if (k.kind == fusion::FusedKernel::Kind::Row) continue;
      auto p = base;
      const int out = k.comps.back();
      p.program.comps[out].dtype = ir::DType::BFloat16;
      auto src = codegen::emit_cuda(p);
      const size_t at = src.find("void " + k.name + "(");
      const std::string body = src.substr(at, src.find("\n}\n", at) - at);
      if (count(body, "// every vector buffer aligned to its vector's size") == 0) continue;
      mixed = true;
      EXPECT_EQ(count(body, "      uint2 v" + std::to_string(out) + ";"), 1) << body;
      EXPECT_EQ(count(body, "*reinterpret_cast<uint2*>(b" + std::to_string(out) + " + base) = v" + std::to_string(out)), 1) << body;
      EXPECT_GT(count(body, "float4 v"), 0) << body;
      EXPECT_GT(count(body, " & 7ULL"), 0) << body;
      EXPECT_GT(count(body, " & 15ULL"), 0) << body;
      auto bin = codegen::compile_cuda(src, "sm_90");
      EXPECT_GT(bin.cubin.size(), 0u);
      break;
    }
    EXPECT_TRUE(mixed);
  }
}

namespace {

// The fused program of a model written in TorchScript here, captured on inputs `spec`.
fusion::FusedProgram scripted_fused(const std::string& name, const std::string& code, const std::string& spec) {
  auto m = model::load_model(test::scripted_model(name, code));
  capture::CompileOptions o;
  o.backend = "eager";
  o.dynamic = false;
  runtime::CapturedRuntime rt(m, o);
  rt.run(runtime::make_inputs({parse_input_spec(spec)}));
  return fusion::schedule(lowering::lower_graph(rt.regions().at(0).entries.at(0).graph).program);
}

// Its CUDA source.
std::string scripted_source(const std::string& name, const std::string& code, const std::string& spec) {
  return codegen::emit_cuda(scripted_fused(name, code, spec));
}

}  // namespace

// A kernel that transposes (attention's key for matmul) runs in 32x32 tiles through shared memory,
// read along the input's contiguous dim and written along the output's, with bounds on sizes that
// are no multiple of 32; a permute that keeps the innermost dim stays an ordinary pointwise kernel.
TEST(EmitCuda, TransposingKernelsRunInSharedMemoryTiles) {
  const std::string code = "def forward(self, x):\n    return x.transpose(1, 2) * 2.0 + 1.0\n";
  for (const char* spec : {"4x48x40", "4x48x40:bfloat16"}) {
    auto src = scripted_source("transpose12", code, spec);
    EXPECT_EQ(count(src, "pointwise kernel (transposing, in 32x32 tiles)"), 1) << src;
    EXPECT_EQ(count(src, "__shared__ float tile[32][33];"), 1) << src;
    EXPECT_EQ(count(src, "read along i1 and written along i2"), 1) << src;
    EXPECT_EQ(count(src, "if (i1 < 40 && i2 < 48)"), 2) << src;  // 40 and 48: partial tiles
    auto bin = codegen::compile_cuda(src, "sm_90");
    EXPECT_GT(bin.cubin.size(), 0u);
  }
  auto kept = scripted_source("transpose01", "def forward(self, x):\n    return x.transpose(0, 1) * 2.0\n", "48x40x8");
  EXPECT_EQ(count(kept, "transposing"), 0) << kept;
  auto small = scripted_source("transpose_small", code, "4x8x40");  // 8 < 16: not worth a tile
  EXPECT_EQ(count(small, "transposing"), 0) << small;
}

// softmax's max and sum, and each layer_norm's mean and variance, are one loop over the row in the
// block-per-row candidates (the rows are not held in registers there).
TEST(EmitCuda, SoftmaxAndLayerNormReduceInOnePass) {
  auto fused = block_program();
  std::vector<codegen::CudaKernelInfo> info;
  auto tuned = codegen::emit_cuda(fused, {}, &info, /*variants=*/true);
  const std::string blocks = block_forms(fused);
  EXPECT_EQ(count(blocks, "    // online softmax: max and sum in one pass\n"), 1);
  EXPECT_EQ(count(blocks, "    // welford: mean and variance in one pass\n"), 2);
  EXPECT_EQ(count(blocks, "kiln_welford_add(n"), 2);
  EXPECT_EQ(count(blocks, "kiln_block_max(acc"), 0);
  EXPECT_EQ(count(blocks, "kiln_block_sum(acc"), 0);
  for (const auto& k : info) {
    if (!k.row) continue;
    ASSERT_EQ(k.variants.size(), 2u) << k.name;
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
    EXPECT_EQ(count(body, "for (kiln_i r = "), 1) << body;  // one reduction loop per row kernel
  }
  auto bin = codegen::compile_cuda(tuned, "sm_90");
  EXPECT_GT(bin.cubin.size(), 0u);
}

// Reductions that only look like softmax or a variance keep their own loops, and a variance
// written with pow is recognized as one (in the block-per-row forms, which reduce in one pass).
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
    auto src = block_forms(p);
    EXPECT_EQ(count(src, "// online softmax"), 0);
    EXPECT_EQ(count(src, "kiln_block_max(acc" + std::to_string(att_max) + ", smem)"), 1);
    EXPECT_EQ(count(src, "kiln_block_sum(acc" + std::to_string(att_sum) + ", smem)"), 1);
    EXPECT_EQ(count(src, "// welford"), 2);
  }
  {  // sum(exp(E - max)) + 1: the sum's body is no longer exp(E - max)
    auto p = base;
    p.program.comps[att_sum].body = ve_binary("add", sum_body, ve_const(1.0));
    EXPECT_EQ(count(block_forms(p), "// online softmax"), 0);
  }
  {  // a plain sum instead of the mean: not the mean that the variance centres on
    auto p = base;
    p.program.comps[mean].post_div_sizes.clear();
    auto src = block_forms(p);
    EXPECT_EQ(count(src, "// welford"), 1);
    EXPECT_EQ(count(src, "kiln_block_sum(acc" + std::to_string(mean) + ", smem)"), 1);
  }
  {  // (E - mean) * (E - mean + 1): not a square
    auto p = base;
    p.program.comps[var].body = ve_binary("mul", centered, ve_binary("add", centered, ve_const(1.0)));
    EXPECT_EQ(count(block_forms(p), "// welford"), 1);
  }
  {  // pow(E - mean, 3): not a square
    auto p = base;
    p.program.comps[var].body = ve_binary("pow", centered, ve_const(3.0));
    EXPECT_EQ(count(block_forms(p), "// welford"), 1);
  }
  {  // pow(E - mean, 2) is the same variance: the same kernels (but for the numbering of the
     // temporaries, which the default forms before them spend differently)
    auto p = base;
    p.program.comps[var].body = ve_binary("pow", centered, ve_const(2.0));
    const std::regex temp("\\bt[0-9]+\\b");
    EXPECT_EQ(std::regex_replace(block_forms(p), temp, "t"), std::regex_replace(block_forms(base), temp, "t"));
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


// The 16-bit products (default mode's own GEMMs): every tile, type and operand layout compiles for the H100,
// with the tensor-core instruction of its type, the asynchronous two-stage copies and one function each.
TEST(GemmTemplate, HalfProductsCompileForSm90WithTensorCoreInstructions) {
  std::vector<codegen::HalfGemmKernel> all;
  for (bool bf16 : {true, false})
    for (bool weight_rows : {true, false})
      for (auto tile : {codegen::GemmConfig{64, 64}, codegen::GemmConfig{128, 64}, codegen::GemmConfig{128, 128}})
        all.push_back({tile, bf16, weight_rows});
  const auto src = codegen::half_gemm_source(all);
  for (const auto& k : all) {
    const std::string name = codegen::half_gemm_name(k);
    EXPECT_NE(src.find("void __launch_bounds__(128) " + name + "(const KilnHalfGemmArgs g)"), std::string::npos) << name;
  }
  EXPECT_EQ(codegen::half_gemm_name(all[0]), "kiln_gemm_bf16_wt_64x64");
  EXPECT_NE(src.find("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"), std::string::npos);
  EXPECT_NE(src.find("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"), std::string::npos);
  EXPECT_NE(src.find("cp.async.cg.shared.global"), std::string::npos);
  EXPECT_NE(src.find("cvt.rn.bf16x2.f32"), std::string::npos);
  EXPECT_NE(src.find("STAGES = 4"), std::string::npos);  // 64x64: four stages in 48 KiB
  EXPECT_NE(src.find("cp.async.wait_group 2;"), std::string::npos);
  EXPECT_EQ(codegen::half_gemm_stages({128, 64}), 3);
  EXPECT_EQ(codegen::half_gemm_stages({128, 128}), 2);
  auto bin = codegen::compile_cuda(src, "sm_90");
  EXPECT_GT(bin.cubin.size(), 0u);
}


// Every candidate the probe times (tiles 32x32 to 128x64, both layouts of B, scalar and ldmatrix fragment loads)
// compiles for the H100 without spilling: registers within the 128-thread bound, no spill stores or loads, no stack,
// and the static shared memory its stages take, (bm + bn) · 40 · 2 bytes a stage with W's rows, bm · 40 · 2 +
// 32 · (bn + 8) · 2 with [k][n] rows. The ldmatrix kernels load their fragments by ldmatrix (.trans for [k][n]) and
// no longer by 32-bit shared loads.
TEST(GemmTemplate, EveryHalfProductCandidateCompilesWithoutSpilling) {
  for (bool bf16 : {true, false}) {
    const auto all = codegen::half_gemm_candidates(bf16);
    ASSERT_EQ(all.size(), 20u);
    const auto src = codegen::half_gemm_source(all);
    const auto used = codegen::half_gemm_kernels(bf16);
    for (const auto& k : used)  // the runtime's set is among the candidates
      EXPECT_NE(std::find_if(all.begin(), all.end(), [&](const codegen::HalfGemmKernel& c) { return codegen::half_gemm_name(c) == codegen::half_gemm_name(k); }),
                all.end());
    const auto res = codegen::kernel_resources(src, "sm_90");
    ASSERT_EQ(res.size(), all.size());
    for (const auto& k : all) {
      const std::string name = codegen::half_gemm_name(k);
      auto r = std::find_if(res.begin(), res.end(), [&](const codegen::KernelResources& x) { return x.function == name; });
      ASSERT_NE(r, res.end()) << name;
      EXPECT_GT(r->registers, 0) << name;
      EXPECT_LE(r->registers, 255) << name;
      EXPECT_EQ(r->spill_store_bytes, 0) << name;
      EXPECT_EQ(r->spill_load_bytes, 0) << name;
      EXPECT_EQ(r->stack_bytes, 0) << name;
      const int stages = codegen::half_gemm_stages(k.tile);
      const int64_t stage = k.weight_rows ? (k.tile.bm + k.tile.bn) * 40 * 2 : k.tile.bm * 40 * 2 + 32 * (k.tile.bn + 8) * 2;
      EXPECT_EQ(r->shared_bytes, stages * stage) << name;
      const size_t begin = src.find("void __launch_bounds__(128) " + name + "(");
      ASSERT_NE(begin, std::string::npos) << name;
      const std::string body = src.substr(begin, src.find("\n}\n", begin) - begin);
      const bool ldsm = k.form == codegen::HalfGemmForm::Ldmatrix;
      EXPECT_EQ(name.size() > 5 && name.substr(name.size() - 5) == "_ldsm", ldsm) << name;
      EXPECT_EQ(body.find("kiln_ldsm_x4(af[i][0]") != std::string::npos, ldsm) << name;
      EXPECT_EQ(body.find(k.weight_rows ? "kiln_ldsm_x4(bf[j][0]" : "kiln_ldsm_x4_trans(bf[j][0]") != std::string::npos, ldsm) << name;
      EXPECT_EQ(body.find("reinterpret_cast<const unsigned*>(&As") == std::string::npos, ldsm) << name;
    }
  }
  EXPECT_NE(codegen::half_gemm_source(codegen::half_gemm_candidates(true)).find("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"),
            std::string::npos);
  // The runtime's own set has no ldmatrix helpers in its source (its cached CUBIN is what was measured).
  EXPECT_EQ(codegen::half_gemm_source(codegen::half_gemm_kernels(true)).find("ldmatrix"), std::string::npos);
  // Tiles the warps cannot split are refused, naming the kernel.
  try {
    codegen::half_gemm_source({{codegen::GemmConfig{64, 48}, true, true, codegen::HalfGemmForm::Ldmatrix}});
    ADD_FAILURE() << "a 64x48 ldmatrix tile was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("kiln_gemm_bf16_wt_64x48_ldsm"), std::string::npos) << e.what();
  }
  EXPECT_THROW(codegen::half_gemm_source({{codegen::GemmConfig{48, 64}, true, true}}), Error);
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

// Index arithmetic runs on 32-bit integers where every extent of the region is known and at most
// 2^26 elements (room for what loop headers compute), and on 64-bit ones otherwise: a region with
// a symbolic size, or one computation past 2^26 elements. Both forms compile.
TEST(EmitCuda, IndicesAre32BitWhereEveryExtentFitsAnd64BitOtherwise) {
  const std::string code =
      "def forward(self, x):\n    y = torch.relu(x * 2.0 + 1.0)\n    return y.sum([2]) + y[:, :, 0]\n";
  auto fused = scripted_fused("index_width", code, "4x3x7");
  const auto narrow = codegen::emit_cuda(fused);
  EXPECT_GT(count(narrow, "typedef int kiln_i;"), 0) << narrow;
  EXPECT_EQ(count(narrow, "typedef long long kiln_i;"), 0) << narrow;
  // No 64-bit constant in any kernel's index arithmetic (the shared prelude keeps kiln_floordiv's).
  const auto kernels = narrow.substr(narrow.find("extern \"C\" __global__"));
  EXPECT_EQ(count(kernels, "LL"), 0) << kernels;
  EXPECT_GT(codegen::compile_cuda(narrow, "sm_90").cubin.size(), 0u);

  auto big = fused;  // 2^25 x 3 x 7 elements: past 2^26
  for (auto& c : big.program.comps)
    if (!c.sizes.empty() && capture::sym_str(c.sizes[0]) == "4") c.sizes[0] = capture::sym_const(int64_t{1} << 25);
  for (auto& k : big.kernels)
    if (!k.outer.empty() && capture::sym_str(k.outer[0]) == "4") k.outer[0] = capture::sym_const(int64_t{1} << 25);
  const auto wide = codegen::emit_cuda(big);
  EXPECT_GT(count(wide, "typedef long long kiln_i;"), 0) << wide;
  EXPECT_EQ(count(wide, "typedef int kiln_i;"), 0) << wide;
  EXPECT_GT(count(wide, "33554432LL"), 0) << wide;
  EXPECT_GT(codegen::compile_cuda(wide, "sm_90").cubin.size(), 0u);

  auto symbolic = fused;
  symbolic.program.symbols.push_back("s0");
  const auto dynamic = codegen::emit_cuda(symbolic);
  EXPECT_GT(count(dynamic, "typedef long long kiln_i;"), 0) << dynamic;
  EXPECT_EQ(count(dynamic, "typedef int kiln_i;"), 0) << dynamic;
}

// A residual add recomputed inside its layer norm keeps the one-pass (Welford) row form: the
// mean and variance read the same recomputed expression.
TEST(EmitCuda, ALayerNormOverARecomputedAddStaysOnePass) {
  const std::string code =
      "def forward(self, x):\n    h = torch.matmul(x, x) * 0.5 + x\n    return torch.layer_norm(h, [64])\n";
  std::vector<codegen::CudaKernelInfo> info;
  const auto src = codegen::emit_cuda(scripted_fused("residual_ln_cuda", code, "64x64"), {}, &info, /*variants=*/true);
  ASSERT_EQ(info.size(), 1u) << src;  // the row kernel alone
  EXPECT_GT(count(src, "// welford: mean and variance in one pass"), 0) << src;
  EXPECT_GT(codegen::compile_cuda(src, "sm_90").cubin.size(), 0u);
}

// The stored add before a layer norm, written by the row kernel's first stage: the warp form keeps
// it in registers as it writes it (no second read), the lanes meet at a barrier before the
// reductions, and the folded 2-d output is stored at its own rows; every form compiles.
TEST(EmitCuda, ARowKernelsFirstStageStaysInRegistersAndItsFoldedEpilogueCompiles) {
  const std::string code =
      "def forward(self, x):\n    h = torch.sin(x) + x\n    y = torch.layer_norm(h, [32])\n"
      "    return y.view(256, 32) + h.view(256, 32)\n";
  std::vector<codegen::CudaKernelInfo> info;
  const auto src = codegen::emit_cuda(scripted_fused("add_ln_view_cuda", code, "16x16x32"), {}, &info, /*variants=*/true);
  ASSERT_EQ(info.size(), 1u) << src;
  EXPECT_GT(count(src, "row kernel (one warp per row)"), 0) << src;
  EXPECT_GT(count(src, "rp0[j] = "), 0) << src;
  EXPECT_GT(count(src, "__syncwarp();  // the next stages read"), 0) << src;
  EXPECT_GT(count(src, "__syncthreads();  // the next stages read"), 0) << src;  // the block form
  EXPECT_GT(codegen::compile_cuda(src, "sm_90").cubin.size(), 0u);
}

// GPT-2's pre-norm layer norm in bfloat16: the residual sum is the row kernel's first stage, stored for the next
// layer and kept in registers rounded as stored (what the reductions would read back), so the row is read once.
TEST(EmitCuda, ASixteenBitFirstStageStaysInRegistersRoundedAsStored) {
  const std::string code =
      "def forward(self, x, a, w, b):\n    h = a + x\n    n = torch.layer_norm(h, [768], w, b, 1e-5)\n"
      "    return n.view(-1, 768) * 2.0, h\n";
  for (const char* dtype : {"bfloat16"}) {  // float16 alike (kiln_half); LibTorch's CPU layer_norm lacks it to capture
    const std::string x = std::string("8x128x768:") + dtype, v = std::string("768:") + dtype;
    auto m = model::load_model(test::scripted_model(std::string("pre_norm_") + dtype, code));
    capture::CompileOptions o;
    o.backend = "eager";
    o.dynamic = false;
    runtime::CapturedRuntime rt(m, o);
    rt.run(runtime::make_inputs({parse_input_spec(x), parse_input_spec(x), parse_input_spec(v), parse_input_spec(v)}));
    const auto src =
        codegen::emit_cuda(fusion::schedule(lowering::lower_graph(rt.regions().at(0).entries.at(0).graph).program));
    const std::string type = std::string(dtype) == "bfloat16" ? "kiln_bf16" : "kiln_half";
    EXPECT_EQ(count(src, "row kernel (one warp per row)"), 1) << src;
    EXPECT_EQ(count(src, "rp0[j] = static_cast<float>(" + type + "(t0));  // as stored"), 1) << src;
    EXPECT_EQ(count(src, "= rp0[j];  // h"), 1) << src;  // stored from the register
    EXPECT_EQ(count(src, "+= rp0[j];"), 1) << src;       // the mean reads the register, not memory
    EXPECT_GT(codegen::compile_cuda(src, "sm_90").cubin.size(), 0u) << dtype;
  }
}
