// cuBLASLt's column-major problem for a row-major product (lt_gemm.h), checked without a GPU: the problem
// lt_problem describes is computed here the way cuBLAS defines it, on the operands' own memory, and compared
// with LibTorch's product; layouts it cannot describe are refused; LtGemm takes no CPU product.
#include "engine/runtime/lt_gemm.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <random>

using namespace kiln;
using runtime::LtOperand;
using runtime::LtProblem;

namespace {

// Element (r, c) of op(X) for a column-major X as cuBLAS reads it.
double op_at(const float* x, const LtOperand& o, int64_t r, int64_t c) {
  return o.trans ? x[c + r * o.ld] : x[r + c * o.ld];
}

// C = op(A) op(B), column-major [m, n] with leading dimension ldc, from the operands' memory: cuBLAS's
// definition of the problem.
std::vector<double> column_major_product(const LtProblem& p, const float* a, const float* b) {
  std::vector<double> c(static_cast<size_t>(p.ldc * p.n), 0.0);
  for (int64_t j = 0; j < p.n; ++j)
    for (int64_t i = 0; i < p.m; ++i) {
      double s = 0;
      for (int64_t l = 0; l < p.k; ++l) s += op_at(a, p.a, i, l) * op_at(b, p.b, l, j);
      c[static_cast<size_t>(i + j * p.ldc)] = s;
    }
  return c;
}

// Checks lt_problem's description of x @ y against LibTorch's product; both operands float32 views.
void expect_describes(const at::Tensor& x, const at::Tensor& y, const std::string& what) {
  SCOPED_TRACE(what);
  auto p = runtime::lt_problem(x.sizes(), x.strides(), y.sizes(), y.strides());
  ASSERT_TRUE(p.has_value());
  // Each operand's stored matrix must fit inside what its view can reach.
  for (const LtOperand& o : {p->a, p->b}) {
    EXPECT_GE(o.ld, o.rows);
    EXPECT_GT(o.rows, 0);
    EXPECT_GT(o.cols, 0);
  }
  EXPECT_EQ(p->m, y.size(1));
  EXPECT_EQ(p->n, x.size(0));
  EXPECT_EQ(p->k, x.size(1));
  EXPECT_EQ(p->ldc, y.size(1));
  // cuBLAS's first operand is y, its second x.
  auto c = column_major_product(*p, y.data_ptr<float>(), x.data_ptr<float>());
  at::Tensor want = at::mm(x.to(at::kDouble), y.to(at::kDouble)).contiguous();  // row-major [M, N] = col-major [N, M]
  ASSERT_EQ(static_cast<int64_t>(c.size()), want.numel());
  const double* w = want.data_ptr<double>();
  double err = 0;
  for (size_t i = 0; i < c.size(); ++i) err = std::max(err, std::abs(c[i] - w[i]));
  EXPECT_LT(err, 1e-9);
}

}  // namespace

TEST(LtGemm, DescribesEveryRowAndColumnContiguousLayout) {
  torch::manual_seed(static_cast<uint64_t>(std::random_device{}()));
  const int64_t M = 5, K = 7, N = 3;
  auto r = [](std::vector<int64_t> s) { return at::randn(s); };
  at::Tensor a = r({M, K}), b = r({K, N});
  expect_describes(a, b, "both row-major");
  at::Tensor w = r({N, K});
  expect_describes(a, w.t(), "a weight transposed, as linear reads it");
  at::Tensor at_ = r({K, M});
  expect_describes(at_.t(), b, "a transposed input");
  expect_describes(at_.t(), w.t(), "both transposed");
  at::Tensor wide = r({M, K + 4}), tall = r({K, N + 6});
  expect_describes(wide.narrow(1, 2, K), tall.narrow(1, 1, N), "slices with leading dimensions above their rows");
  expect_describes(r({K + 3, M}).narrow(0, 3, K).t(), r({N + 2, K}).narrow(0, 1, N).t(), "transposed slices");
}

TEST(LtGemm, DescribesVectorsWhateverTheirUnitStride) {
  torch::manual_seed(static_cast<uint64_t>(std::random_device{}()));
  // A size-1 dimension's stride can be anything in LibTorch (a row of a matrix, a column of another).
  at::Tensor row = at::randn({4, 9}).narrow(0, 2, 1);         // [1, 9] with stride (9, 1)
  at::Tensor col = at::randn({9, 6}).narrow(1, 4, 1);         // [9, 1] with stride (6, 1)
  at::Tensor colt = at::randn({6, 9}).narrow(0, 5, 1).t();    // [9, 1] with stride (1, 9)
  expect_describes(row, at::randn({9, 3}), "a single row");
  expect_describes(row, col, "a dot product");
  expect_describes(at::randn({3, 9}), colt, "a matrix times a transposed column");
  expect_describes(at::randn({4, 1}), at::randn({1, 5}), "an outer product (K = 1)");
  expect_describes(at::randn({1, 1}), at::randn({1, 1}), "one by one");
}

TEST(LtGemm, RefusesLayoutsItCannotDescribe) {
  auto refuses = [](const at::Tensor& x, const at::Tensor& y) {
    return !runtime::lt_problem(x.sizes(), x.strides(), y.sizes(), y.strides()).has_value();
  };
  at::Tensor b = at::randn({8, 4});
  EXPECT_TRUE(refuses(at::randn({3, 16}).slice(1, 0, 16, 2), b)) << "every other column: no unit stride";
  EXPECT_TRUE(refuses(at::randn({1, 8}).expand({3, 8}), b)) << "an expanded row: leading dimension 0";
  EXPECT_TRUE(refuses(at::randn({0, 8}), b)) << "no rows";
  EXPECT_TRUE(refuses(at::randn({3, 8}), at::randn({8, 0}))) << "no columns";
  EXPECT_TRUE(refuses(at::randn({3, 5}), b)) << "inner sizes differ";
  EXPECT_TRUE(refuses(at::randn({2, 3, 8}), b)) << "not a matrix";
  at::Tensor base = at::randn({4, 4, 8});
  EXPECT_TRUE(refuses(base.select(2, 1), at::randn({4, 2}))) << "a matrix with strides (32, 8)";
}

TEST(LtGemm, TakesNoProductOffTheGpu) {
  runtime::LtGemm lt;
  const uint64_t before = runtime::lt_gemm_calls();
  EXPECT_FALSE(lt.mm(at::randn({4, 8}), at::randn({8, 2})).defined());
  EXPECT_EQ(runtime::lt_gemm_calls(), before);
}
