// Index simplification: the same value at every point of the loops, with fewer divisions.
#include "engine/lowering/index_simplify.h"

#include <gtest/gtest.h>

#include <functional>
#include <random>

using namespace kiln::lowering;  // NOLINT

namespace {

int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }
int64_t floor_mod(int64_t a, int64_t b) { return a - floor_div(a, b) * b; }

int64_t eval(const IExpr& e, const std::vector<int64_t>& v) {
  using Op = IExprNode::Op;
  switch (e->op) {
    case Op::Const: return e->value;
    case Op::Var: return v[static_cast<size_t>(e->var)];
    case Op::Size: return 0;
    case Op::Add: return eval(e->a, v) + eval(e->b, v);
    case Op::Mul: return eval(e->a, v) * eval(e->b, v);
    case Op::FloorDiv: return floor_div(eval(e->a, v), eval(e->b, v));
    case Op::Mod: return floor_mod(eval(e->a, v), eval(e->b, v));
    case Op::Min: return std::min(eval(e->a, v), eval(e->b, v));
    case Op::Max: return std::max(eval(e->a, v), eval(e->b, v));
  }
  return 0;
}

int divisions(const IExpr& e) {
  if (!e || e->op == IExprNode::Op::Const || e->op == IExprNode::Op::Var || e->op == IExprNode::Op::Size) return 0;
  const bool div = e->op == IExprNode::Op::FloorDiv || e->op == IExprNode::Op::Mod;
  return (div ? 1 : 0) + divisions(e->a) + divisions(e->b);
}

IExpr v(int k) { return ie_var(k); }
IExpr c(int64_t x) { return ie_const(x); }

}  // namespace

// GPT-2's MLP activation reads its GEMM's output through reshape [16,128] -> [2,8,128] -> [16,128]:
// the load index, written out by the view chain, is the element's own position.
TEST(IndexSimplify, AViewChainThatPutsTheElementBackIsTheElementsOwnIndex) {
  const IExpr a = ie_add(ie_mul(v(0), c(128)), v(1));
  const IExpr x = ie_add(ie_add(ie_mul(ie_floordiv(a, c(1024)), c(1024)),
                                ie_mul(ie_mod(ie_floordiv(a, c(128)), c(8)), c(128))),
                         ie_mod(a, c(128)));
  const std::vector<int64_t> ext = {16, 128};
  EXPECT_EQ(ie_str(ie_simplify(ie_floordiv(x, c(128)), ext)), "i0");
  EXPECT_EQ(ie_str(ie_simplify(ie_mod(x, c(128)), ext)), "i1");
  // Without the extents nothing depending on them folds, and the value is kept.
  const IExpr kept = ie_simplify(ie_floordiv(a, c(128)), {});
  EXPECT_EQ(divisions(kept), 1) << ie_str(kept);
  for (int64_t i1 : {-300, -1, 0, 127, 128, 500})
    EXPECT_EQ(eval(kept, {3, i1}), floor_div(3 * 128 + i1, 128)) << ie_str(kept);
  // A split of one index rejoined: (i // 8)*8 + i % 8.
  EXPECT_EQ(ie_str(ie_simplify(ie_add(ie_mul(ie_floordiv(v(0), c(8)), c(8)), ie_mod(v(0), c(8))), {})), "i0");
  // Nested: (i // 32)*4 + (i // 8) % 4 is i // 8.
  EXPECT_EQ(ie_str(ie_simplify(ie_add(ie_mul(ie_floordiv(v(0), c(32)), c(4)), ie_mod(ie_floordiv(v(0), c(8)), c(4))), {})),
            "(i0 // 8)");
  EXPECT_EQ(ie_range(ie_mod(ie_add(v(0), c(-3)), c(5)), {10}).lo, 0);
}

TEST(IndexSimplify, AClampKeepsOnlyTheBoundsItsIndexCanCross) {
  // A window's tap: i0 - 1 clamped into [0, 9] over i0 in [0, 10) can fall below 0, never above 9.
  const IExpr tap = ie_clamp(ie_add(v(0), c(-1)), 0, 9);
  EXPECT_EQ(ie_str(ie_simplify(tap, {10})), "max((i0 + -1), 0)");
  EXPECT_EQ(ie_range(tap, {10}).lo, 0);
  EXPECT_EQ(ie_range(tap, {10}).hi, 8);
  EXPECT_EQ(ie_str(ie_simplify(ie_clamp(ie_add(v(0), c(1)), 0, 9), {10})), "min((i0 + 1), 9)");
  EXPECT_EQ(ie_str(ie_simplify(ie_clamp(v(0), 0, 9), {10})), "i0");
  EXPECT_EQ(ie_str(ie_simplify(ie_clamp(v(0), 0, 9), {-1})), "max(min(i0, 9), 0)");  // extent unknown
  EXPECT_EQ(ie_str(ie_clamp(c(12), 0, 9)), "9");
}

// Random index expressions over three loops with small extents: the simplified one gives the same
// value at every point, and never has more divisions.
TEST(IndexSimplify, RandomExpressionsKeepTheirValueAtEveryPoint) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  std::function<IExpr(int)> gen = [&](int depth) -> IExpr {
    if (depth == 0 || pick(4) == 0) return pick(3) == 0 ? c(pick(17) - 4) : v(pick(3));
    switch (pick(7)) {
      case 5: return ie_min(gen(depth - 1), gen(depth - 1));
      case 6: return ie_clamp(gen(depth - 1), pick(5) - 2, 2 + pick(9));
      case 0: return ie_add(gen(depth - 1), gen(depth - 1));
      case 1: return ie_mul(gen(depth - 1), c(pick(9) - 2));
      case 2: return ie_floordiv(gen(depth - 1), c(1 + pick(12)));
      case 3: return ie_mod(gen(depth - 1), c(1 + pick(12)));
      default: return ie_mul(gen(depth - 1), gen(depth - 1));
    }
  };
  int simplified = 0;
  for (int n = 0; n < 3000; ++n) {
    const IExpr e = gen(5);
    std::vector<int64_t> ext = {1 + pick(9), 1 + pick(9), 1 + pick(9)};
    if (pick(4) == 0) ext[static_cast<size_t>(pick(3))] = -1;  // an extent not known
    const IExpr s = ie_simplify(e, ext);
    ASSERT_LE(divisions(s), divisions(e)) << ie_str(e) << " -> " << ie_str(s);
    if (divisions(s) < divisions(e)) ++simplified;
    std::vector<int64_t> r(3);
    for (int i = 0; i < 3; ++i) r[static_cast<size_t>(i)] = ext[static_cast<size_t>(i)] > 0 ? ext[static_cast<size_t>(i)] : 7;
    for (int64_t a = 0; a < r[0]; ++a)
      for (int64_t b = 0; b < r[1]; ++b)
        for (int64_t d = 0; d < r[2]; ++d) {
          // An unknown extent: any value, negative ones included.
          std::vector<int64_t> at = {ext[0] > 0 ? a : a * 37 - 100, ext[1] > 0 ? b : b * 37 - 100, ext[2] > 0 ? d : d * 37 - 100};
          ASSERT_EQ(eval(s, at), eval(e, at)) << ie_str(e) << " -> " << ie_str(s) << " at " << at[0] << "," << at[1]
                                              << "," << at[2];
          const IndexRange range = ie_range(e, ext);  // holds every value
          ASSERT_TRUE(eval(e, at) >= range.lo && eval(e, at) <= range.hi) << ie_str(e);
        }
  }
  EXPECT_GT(simplified, 100);  // the rules do apply
}
