// Matrix products through cuBLASLt directly (runtime/lt_gemm.h): LibTorch's product for every dtype,
// precision and operand layout it takes, every element written, timed candidates in max-autotune, and a
// region's products going there.
#include <gtest/gtest.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <ATen/Context.h>

#include <cmath>
#include <random>

#include "engine/model/model.h"
#include "engine/runtime/captured_runtime.h"
#include "engine/runtime/compare_values.h"
#include "engine/runtime/example_inputs.h"
#include "engine/runtime/lt_gemm.h"
#include "tests/support/gpu_checks.h"
#include "tests/support/paths.h"

using namespace kiln;

namespace {

using test::rel_error;

// Leaves NaN in the caching allocator's free blocks of about `bytes`, so an output that reuses one and
// misses an element shows it.
void poison_allocator(int64_t bytes) {
  for (int i = 0; i < 4; ++i) at::full({bytes / 4 + 64}, NAN, at::TensorOptions().device(at::kCUDA));
}

struct Shape {
  int64_t m, k, n;
};

}  // namespace

TEST(GpuLtGemm, EqualsLibTorchForDtypesPrecisionsAndLayouts) {
  REQUIRE_GPU();
  torch::manual_seed(static_cast<uint64_t>(std::random_device{}()));
  auto& ctx = at::globalContext();
  const auto precision = ctx.float32MatmulPrecision();
  // Tolerances (max error over the largest |LibTorch|): full float32 1e-5 (algorithms differ in summation
  // order only); TF32 and the 16-bit types their mantissas' rounding over up to 4096 products.
  struct Type {
    at::ScalarType dtype;
    bool tf32;
    double tol;
  };
  const std::vector<Shape> shapes = {{64, 1024, 4096}, {1024, 512, 512}, {1, 768, 768}, {7, 13, 5}};
  for (const Type& t : {Type{at::kFloat, false, 1e-5}, Type{at::kFloat, true, 5e-3}, Type{at::kBFloat16, false, 2e-2},
                        Type{at::kHalf, false, 5e-3}}) {
    ctx.setFloat32MatmulPrecision(t.tf32 ? "high" : "highest");
    for (const Shape& s : shapes)
      for (int layout = 0; layout < 4; ++layout) {
        SCOPED_TRACE(std::string(c10::toString(t.dtype)) + (t.tf32 ? " tf32" : "") + " " + std::to_string(s.m) + "x" +
                     std::to_string(s.k) + "x" + std::to_string(s.n) + " layout " + std::to_string(layout));
        auto opts = at::TensorOptions().device(at::kCUDA).dtype(t.dtype);
        at::Tensor a, b;
        if (layout == 0) {  // both row-major
          a = at::randn({s.m, s.k}, opts);
          b = at::randn({s.k, s.n}, opts);
        } else if (layout == 1) {  // a linear's weight, transposed
          a = at::randn({s.m, s.k}, opts);
          b = at::randn({s.n, s.k}, opts).t();
        } else if (layout == 2) {  // a transposed input
          a = at::randn({s.k, s.m}, opts).t();
          b = at::randn({s.k, s.n}, opts);
        } else {  // slices one element in: pointers aligned to the element only, leading dimensions wider
          a = at::randn({s.m, s.k + 1}, opts).narrow(1, 1, s.k);
          b = at::randn({s.k, s.n + 3}, opts).narrow(1, 1, s.n);
        }
        runtime::LtGemm lt(/*tune=*/false, /*all_dtypes=*/true);  // float32 untuned too
        const at::Tensor ref = at::mm(a, b);
        for (int rep = 0; rep < 2; ++rep) {  // its plan made, then reused
          poison_allocator(s.m * s.n * static_cast<int64_t>(a.element_size()));
          const uint64_t before = runtime::lt_gemm_calls();
          at::Tensor y = lt.mm(a, b);
          if (!y.defined()) {
            // Only the slices may be refused (no algorithm for such alignment); never an aligned product.
            EXPECT_EQ(layout, 3) << "cuBLASLt did not take an aligned product";
            EXPECT_EQ(runtime::lt_gemm_calls(), before);
            continue;
          }
          EXPECT_EQ(runtime::lt_gemm_calls(), before + 1);
          EXPECT_EQ(y.sizes(), ref.sizes());
          EXPECT_TRUE(y.is_contiguous());
          EXPECT_EQ(y.scalar_type(), t.dtype);
          EXPECT_LE(rel_error(y, ref), t.tol);
        }
      }
  }
  ctx.setFloat32MatmulPrecision(precision == at::Float32MatmulPrecision::HIGHEST ? "highest"
                                : precision == at::Float32MatmulPrecision::HIGH  ? "high"
                                                                                 : "medium");
}

TEST(GpuLtGemm, MaxAutotuneTimesTheCandidatesAndKeepsACorrectOne) {
  REQUIRE_GPU();
  for (auto dtype : {at::kFloat, at::kBFloat16}) {
    auto opts = at::TensorOptions().device(at::kCUDA).dtype(dtype);
    at::Tensor a = at::randn({1024, 512}, opts), w = at::randn({2048, 512}, opts);
    runtime::LtGemm lt(/*tune=*/true);
    const uint64_t before = runtime::lt_gemm_calls();
    at::Tensor y = lt.mm(a, w.t());
    const std::string choice = lt.last_choice();
    // The race as the session's autotune table shows it: LibTorch's product first, then each candidate, every
    // contender timed on the device or saying why not, exactly one kept.
    const auto races = lt.races();
    ASSERT_EQ(races.size(), 1u);
    EXPECT_EQ(races[0].problem.rfind("1024x512 @ 512x2048 ", 0), 0u) << races[0].problem;
    ASSERT_GE(races[0].rows.size(), 2u);
    EXPECT_EQ(races[0].rows[0].what, "LibTorch's product (cublasGemmEx)");
    int kept = 0;
    for (const auto& row : races[0].rows) {
      kept += row.chosen;
      EXPECT_TRUE(row.ms > 0 || row.what.find(" - ") != std::string::npos) << row.what;
    }
    EXPECT_EQ(kept, 1);
    EXPECT_EQ(races[0].rows[0].chosen, !y.defined());
    if (!y.defined()) {  // LibTorch's own product was the fastest: left to it, and said so
      EXPECT_EQ(choice.rfind("LibTorch's product (faster than cuBLASLt's", 0), 0u) << choice;
      EXPECT_EQ(runtime::lt_gemm_calls(), before);
      EXPECT_FALSE(lt.mm(a, w.t()).defined()) << "the decision is kept";
      continue;
    }
    EXPECT_TRUE(choice.find("(timed)") != std::string::npos || choice.find("heuristic's first") != std::string::npos)
        << choice;
    EXPECT_LE(rel_error(y, at::mm(a, w.t())), dtype == at::kFloat ? 1e-5 : 2e-2);
    poison_allocator(y.numel() * y.element_size());
    EXPECT_LE(rel_error(lt.mm(a, w.t()), at::mm(a, w.t())), dtype == at::kFloat ? 1e-5 : 2e-2) << "the kept plan";
  }
}

// A problem is timed once per process: another tuned product of the same problem (a model's repeated blocks)
// takes that race's outcome and rows instead of timing the candidates again; a new problem is timed.
TEST(GpuLtGemm, AProblemIsTimedOncePerProcess) {
  REQUIRE_GPU();
  auto opts = at::TensorOptions().device(at::kCUDA).dtype(at::kFloat);
  at::Tensor a = at::randn({768, 384}, opts), w = at::randn({1536, 384}, opts);
  runtime::LtGemm first(/*tune=*/true), second(/*tune=*/true), other(/*tune=*/true);
  at::Tensor y1 = first.mm(a, w.t());
  const std::string chose = first.last_choice();
  EXPECT_EQ(chose.find("earlier product"), std::string::npos) << chose;
  at::Tensor y2 = second.mm(a, w.t());
  EXPECT_EQ(second.last_choice(), chose + ", timed for an earlier product of this problem");
  ASSERT_EQ(first.races().size(), 1u);
  ASSERT_EQ(second.races().size(), 1u);
  const auto r1 = first.races()[0], r2 = second.races()[0];
  EXPECT_EQ(r2.problem, r1.problem);
  ASSERT_EQ(r2.rows.size(), r1.rows.size());
  for (size_t i = 0; i < r1.rows.size(); ++i) {
    EXPECT_EQ(r2.rows[i].what, r1.rows[i].what);
    EXPECT_EQ(r2.rows[i].ms, r1.rows[i].ms);
    EXPECT_EQ(r2.rows[i].chosen, r1.rows[i].chosen);
  }
  EXPECT_EQ(y2.defined(), y1.defined()) << "the same decision";
  if (y2.defined()) EXPECT_LE(rel_error(y2, at::mm(a, w.t())), 1e-5);
  at::Tensor b = at::randn({768, 320}, opts), v = at::randn({1536, 320}, opts);
  other.mm(b, v.t());
  EXPECT_EQ(other.last_choice().find("earlier product"), std::string::npos) << "a new problem is timed";
}

// The races check every candidate's output against LibTorch's product on the device (compare_values.h): the same
// verdict, counts and error as the host's comparison, non-finite elements included.
TEST(GpuLtGemm, ResultsAreComparedOnTheDeviceAsOnTheHost) {
  REQUIRE_GPU();
  auto opts = at::TensorOptions().device(at::kCUDA);
  at::Tensor want = at::randn({512, 768}, opts);
  at::Tensor got = want + at::randn({512, 768}, opts) * 1e-6;
  got.index_put_({7, 9}, NAN);
  got.index_put_({100, 3}, INFINITY);
  got.index_put_({200, 5}, want.index({200, 5}) + 1.0);
  for (double tol : {0.0, 1e-4, 1.0}) {
    auto there = runtime::compare_tensors("t", got, want, tol, tol);
    auto here = runtime::compare_tensors("t", got.cpu(), want.cpu(), tol, tol);
    EXPECT_EQ(there.mismatched, here.mismatched) << tol;
    EXPECT_EQ(there.ok, here.ok) << tol;
    EXPECT_TRUE(std::isinf(there.max_rel) && std::isinf(here.max_rel)) << tol;
  }
  got.index_put_({7, 9}, want.index({7, 9}));
  got.index_put_({100, 3}, want.index({100, 3}));
  auto there = runtime::compare_tensors("t", got, want, 1e-4, 1e-5);
  auto here = runtime::compare_tensors("t", got.cpu(), want.cpu(), 1e-4, 1e-5);
  EXPECT_EQ(there.mismatched, 1);
  EXPECT_EQ(here.mismatched, 1);
  EXPECT_NEAR(there.max_rel, here.max_rel, 1e-6 * here.max_rel);
}

TEST(GpuLtGemm, LeavesToLibTorchWhatItDoesNotTake) {
  REQUIRE_GPU();
  runtime::LtGemm lt;
  auto cuda = at::TensorOptions().device(at::kCUDA);
  EXPECT_FALSE(lt.mm(at::ones({4, 8}, cuda.dtype(at::kLong)), at::ones({8, 2}, cuda.dtype(at::kLong))).defined());
  EXPECT_FALSE(lt.mm(at::randn({4, 8}, cuda), at::randn({8, 2}, cuda.dtype(at::kDouble))).defined()) << "mixed";
  EXPECT_FALSE(lt.mm(at::randn({4, 8}, cuda), at::randn({8, 2})).defined()) << "one on the CPU";
  EXPECT_FALSE(lt.mm(at::randn({4, 16}, cuda).slice(1, 0, 16, 2), at::randn({8, 2}, cuda)).defined()) << "strided";
  auto bf16 = cuda.dtype(at::kBFloat16);
  at::Tensor w = at::randn({8, 2}, bf16).requires_grad_(true);
  EXPECT_FALSE(lt.mm(at::randn({4, 8}, bf16), w).defined()) << "gradients required";
  EXPECT_TRUE(lt.mm(at::randn({4, 8}, bf16), at::randn({8, 2}, bf16)).defined()) << "bfloat16 is taken";
  EXPECT_FALSE(lt.mm(at::randn({4, 8}, cuda), at::randn({8, 2}, cuda)).defined())
      << "float32 untuned: cublasGemmEx's choice (lt_gemm.h)";
}

// A bfloat16 region's products go to cuBLASLt (and not with KILN_CUBLASLT=0), with eager's results.
TEST(GpuLtGemm, ARegionsProductsGoThroughIt) {
  REQUIRE_GPU();
  torch::jit::Module m("Mlp");
  m.register_parameter("w1", torch::randn({256, 128}) * 0.05, false);
  m.register_parameter("b1", torch::randn({256}), false);
  m.register_parameter("w2", torch::randn({64, 256}) * 0.05, false);
  m.define(R"JIT(
def forward(self, x):
    h = torch.relu(torch.linear(x, self.w1, self.b1))
    return torch.matmul(h, self.w2.t()) * 2.0
)JIT");
  const std::string path = test::temp_dir() + "/lt_mlp.pt";
  m.to(at::kCUDA, at::kBFloat16);
  m.save(path);
  auto model = model::load_model(path, "cuda");
  auto x = runtime::make_inputs({parse_input_spec("4x32x128")}, std::random_device{}())[0].to(at::kCUDA, at::kBFloat16);
  torch::NoGradGuard no_grad;
  const at::Tensor eager = m.forward({x}).toTensor();
  for (const char* mode : {"default", "reduce-overhead", "max-autotune"})
    for (const char* on : {"1", "0"}) {
      SCOPED_TRACE(std::string(mode) + " KILN_CUBLASLT=" + on);
      ::setenv("KILN_CUBLASLT", on, 1);
      capture::CompileOptions o;
      o.backend = "kiln";
      o.mode = mode;
      o.products = "library";  // not Kiln's own 16-bit products (half_gemm.h), which default mode's small ones are
      runtime::CapturedRuntime rt(model, o);
      const uint64_t before = runtime::lt_gemm_calls();
      at::Tensor out;
      for (int i = 0; i < 3; ++i) out = rt.run({x})[0].toTensor();
      const uint64_t calls = runtime::lt_gemm_calls() - before;
      ::unsetenv("KILN_CUBLASLT");
      // Default: the bias-free linear and the matmul (its rows folded) each call; reduce-overhead: in the
      // calls that record its graph; max-autotune: wherever timing chose cuBLASLt.
      if (std::string(on) == "0") EXPECT_EQ(calls, 0u);
      else if (std::string(mode) == "default") EXPECT_EQ(calls, 6u) << "two products a call, three calls";
      else if (std::string(mode) == "reduce-overhead") EXPECT_GE(calls, 2u);
      EXPECT_LE(rel_error(out, eager), 3e-2);  // bfloat16 results: 8 bits of mantissa over 256 products
    }
}
