// GPU tests (label "gpu") of Kiln's own 16-bit products (runtime/cuda/half_gemm.h): against the float32 product of
// the same operands rounded once (and against cuBLAS's), every tile, both layouts of the second operand, ragged
// edges; the problems they refuse; and the bfloat16 transformers of the corpus in default mode, where they take
// the products, against eager.
#include <gtest/gtest.h>

#include "kiln_build_config.h"

#include "engine/model/model_impl.h"
#include "engine/runtime/captured_runtime.h"
#include "engine/runtime/example_inputs.h"
#include "tests/support/gpu_checks.h"
#include "tests/support/paths.h"

#if KILN_WITH_CUDA
#include "engine/runtime/cuda/half_gemm.h"
#endif

using namespace kiln;

using test::rel_error;

#if KILN_WITH_CUDA
namespace {

// A tensor of `sizes` whose memory held NaNs just before (the caching allocator hands the same block back): an
// element the kernel skips shows up as NaN.
void poison_next(at::IntArrayRef sizes, at::ScalarType type) {
  at::Tensor p = at::full(sizes, NAN, at::TensorOptions().dtype(type).device(at::kCUDA));
  (void)p;
}

struct Problem {
  int64_t m, n, k;
};
// Ragged edges, one tile, a row or column of tiles, the large tile (enough blocks for every multiprocessor),
// BERT-base's projection at 1024 tokens, a long k.
const std::vector<Problem> kProblems = {{1, 8, 8},       {37, 24, 40},    {64, 64, 32},  {130, 264, 72},
                                        {1024, 768, 768}, {1000, 3072, 96}, {16, 64, 4096}};

// The float32 product of the 16-bit operands, rounded once to their type, is what the kernel computes (float32
// accumulation, one rounding): they may differ where the summation order moves a value across a rounding
// boundary, by one spacing of the type at that value, so the bound is one spacing at the output's largest
// magnitude (at most 2^-7 of it for bfloat16, 2^-10 for float16). A wrong index or layout is off by the values
// themselves. `own` takes the problems of `layouts` (W's rows, [k, n]), each on fresh random operands.
void expect_products_rounded_once(runtime::OwnProduct& own, bool bf16, const std::vector<bool>& layouts,
                                  const std::string& label) {
  const auto type = bf16 ? at::kBFloat16 : at::kHalf;
  const double spacing = bf16 ? 1.0 / 128 : 1.0 / 1024;
  for (const auto& p : kProblems)
    for (bool weight_rows : layouts) {
      auto opt = at::TensorOptions().dtype(type).device(at::kCUDA);
      at::Tensor a = at::randn({p.m, p.k}, opt);
      at::Tensor b = weight_rows ? at::randn({p.n, p.k}, opt).t() : at::randn({p.k, p.n}, opt);
      poison_next({p.m, p.n}, type);
      const uint64_t before = runtime::half_gemm_calls();
      at::Tensor c = own.mm(a, b);
      const std::string what = label + (bf16 ? " bfloat16 " : " float16 ") + std::to_string(p.m) + "x" +
                               std::to_string(p.n) + "x" + std::to_string(p.k) + (weight_rows ? " w.t()" : " [k, n]");
      ASSERT_TRUE(c.defined()) << what;
      EXPECT_EQ(runtime::half_gemm_calls(), before + 1) << what;
      EXPECT_EQ(c.sizes(), at::IntArrayRef({p.m, p.n})) << what;
      EXPECT_TRUE(c.is_contiguous()) << what;
      EXPECT_EQ(c.scalar_type(), type) << what;
      at::Tensor exact = at::mm(a.to(at::kFloat), b.to(at::kFloat));
      EXPECT_LE(rel_error(c, exact.to(type)), spacing) << what;
      EXPECT_LE(rel_error(c, at::mm(a, b)), 2 * spacing) << what << " (against cuBLAS)";
    }
}

}  // namespace

TEST(HalfGemm, ProductsEqualTheFloat32ProductRoundedOnce) {
  REQUIRE_GPU();
  for (bool bf16 : {true, false}) expect_products_rounded_once(*runtime::half_gemms(0, bf16), bf16, {true, false}, "used set");
}

// The same for every candidate the probe times (codegen::half_gemm_candidates: tiles 32x32 to 128x64, scalar and
// ldmatrix fragment loads), each on its layout of b; a product in the other layout is refused.
TEST(HalfGemm, EveryCandidateKernelEqualsTheFloat32ProductRoundedOnce) {
  REQUIRE_GPU();
  for (bool bf16 : {true, false})
    for (const auto& k : codegen::half_gemm_candidates(bf16)) {
      auto own = runtime::half_gemm_kernel(k);
      expect_products_rounded_once(*own, bf16, {k.weight_rows}, codegen::half_gemm_name(k));
      auto opt = at::TensorOptions().dtype(bf16 ? at::kBFloat16 : at::kHalf).device(at::kCUDA);
      at::Tensor a = at::randn({64, 64}, opt);
      at::Tensor other = k.weight_rows ? at::randn({64, 64}, opt) : at::randn({64, 64}, opt).t();
      EXPECT_FALSE(own->mm(a, other).defined()) << codegen::half_gemm_name(k) << ": the other layout of b";
    }
}

// Problems outside the kernels' preconditions are refused (the caller's cuBLAS path runs): k or n not a multiple
// of 8, an operand that is neither layout, another type, the CPU, a misaligned view, a product above the bound.
TEST(HalfGemm, RefusesWhatItCannotCompute) {
  REQUIRE_GPU();
  auto own = runtime::half_gemms(2.0 * 64 * 64 * 64, true);
  auto opt = at::TensorOptions().dtype(at::kBFloat16).device(at::kCUDA);
  auto a = at::randn({64, 64}, opt), b = at::randn({64, 64}, opt);
  EXPECT_TRUE(own->mm(a, b).defined());
  EXPECT_FALSE(own->mm(at::randn({64, 12}, opt), at::randn({12, 64}, opt)).defined()) << "k = 12";
  EXPECT_FALSE(own->mm(a, at::randn({64, 20}, opt)).defined()) << "n = 20";
  EXPECT_FALSE(own->mm(a, at::randn({64, 128}, opt).narrow(1, 0, 64)).defined()) << "b strided";
  EXPECT_FALSE(own->mm(a.t(), b).defined()) << "a transposed";
  EXPECT_FALSE(own->mm(a.to(at::kFloat), b.to(at::kFloat)).defined()) << "float32";
  EXPECT_FALSE(own->mm(a.to(at::kHalf), b.to(at::kHalf)).defined()) << "float16 to the bfloat16 kernels";
  EXPECT_FALSE(own->mm(a.cpu(), b.cpu()).defined()) << "on the CPU";
  EXPECT_FALSE(own->mm(at::randn({64 * 64 + 1}, opt).narrow(0, 1, 64 * 64).view({64, 64}), b).defined()) << "misaligned";
  EXPECT_FALSE(own->mm(at::randn({65, 64}, opt), b).defined()) << "above the bound";
}

// The corpus's bfloat16 BERT (linears: w.t()) and GPT-2 (Conv1D: [k, n] weights) in default mode: their products go
// to Kiln's kernels with --products kiln and with --products library to cuBLAS. The yardstick is eager's result: Kiln's
// with its own products is at most twice as far from it as Kiln's with cuBLAS's, plus one spacing of bfloat16 (the
// form of test::sixteen_bit_bound: both round differently from eager, both are right).
TEST(HalfGemm, DefaultModeComputesTheTransformersProductsAndMatchesEager) {
  REQUIRE_GPU();
  for (const char* name : {"corpus/bert_embeds_bf16.pt", "corpus/gpt2_embeds_bf16.pt"}) {
    auto m = model::load_model(test::data(name), "cuda");
    auto& module = const_cast<torch::jit::Module&>(m.impl->module);
    capture::CompileOptions own_o, lib_o;
    own_o.backend = lib_o.backend = "kiln";
    own_o.products = "kiln";
    lib_o.products = "library";
    runtime::CapturedRuntime own(m, own_o), lib(m, lib_o);
    for (int rep = 0; rep < 3; ++rep) {
      auto x = runtime::make_inputs({parse_input_spec("2x8x32:bfloat16")})[0].to(at::kCUDA);
      uint64_t before = runtime::half_gemm_calls();
      auto out = own.run({x})[0].toTensor().clone();
      EXPECT_GT(runtime::half_gemm_calls() - before, 0u) << name << ": --products kiln";
      before = runtime::half_gemm_calls();
      auto lib_out = lib.run({x})[0].toTensor().clone();
      EXPECT_EQ(runtime::half_gemm_calls() - before, 0u) << name << ": --products library";
      torch::NoGradGuard g;
      auto ref = runtime::eager_call(module, {x}).toTensor();
      const double lib_err = rel_error(lib_out, ref);
      EXPECT_LE(rel_error(out, ref), test::sixteen_bit_bound(lib_err, ref.scalar_type()))
          << name << " (cuBLAS's products: " << lib_err << ")";
    }
  }
}
#endif
