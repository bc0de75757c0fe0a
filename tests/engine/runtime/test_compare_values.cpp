#include "engine/runtime/compare_values.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <tuple>

using namespace kiln;
using runtime::compare_tensors;

TEST(CompareValues, ToleranceIsAbsolutePlusRelative) {
  auto b = at::tensor({1.0f, 100.0f, 0.0f});
  EXPECT_TRUE(compare_tensors("t", b + at::tensor({1e-5f, 5e-3f, 1e-6f}), b, 1e-4, 2e-5).ok);
  auto d = compare_tensors("t", b + at::tensor({0.0f, 0.0f, 1e-4f}), b, 1e-4, 1e-5);
  EXPECT_FALSE(d.ok);
  EXPECT_EQ(d.mismatched, 1);
  EXPECT_EQ(d.elements, 3);
  EXPECT_NEAR(d.max_abs, 1e-4, 1e-9);
  EXPECT_NEAR(d.max_rel, 1e-6, 1e-9);  // relative to the largest eager magnitude (100)
}

TEST(CompareValues, NanMatchesOnlyNanAndInfinityOnlyItself) {
  auto b = at::tensor({NAN, INFINITY, 1.0f});
  EXPECT_TRUE(compare_tensors("t", b.clone(), b, 0, 0).ok);
  auto d = compare_tensors("t", at::tensor({1.0f, INFINITY, 1.0f}), b, 1, 1);
  EXPECT_FALSE(d.ok);
  EXPECT_TRUE(std::isinf(d.max_abs));
  EXPECT_FALSE(compare_tensors("t", at::tensor({NAN, -INFINITY, 1.0f}), b, 1, 1).ok);
  EXPECT_FALSE(compare_tensors("t", at::tensor({NAN, INFINITY, NAN}), b, 1, 1).ok);
}

// A GPU's tensors are compared where they are, in float32 (compare_tensors_as): the same verdicts as the
// host's float64, the same counts, errors within float32's rounding of them.
TEST(CompareValues, Float32WorkingPrecisionGivesTheHostsVerdicts) {
  at::manual_seed(static_cast<uint64_t>(std::random_device{}()));
  at::Tensor b = at::randn({4096});
  at::Tensor a = b + at::randn({4096}) * 1e-6;  // well inside the tolerances, far from their edges
  for (int i : {3, 70, 900}) a[i] = b[i] + 1.0;  // three outside every tolerance below
  b[11] = NAN, a[11] = NAN;                      // equal: 0
  b[12] = INFINITY, a[12] = INFINITY;            // equal: 0
  a[13] = NAN;                                   // one side only: infinite
  b[14] = -INFINITY, a[14] = INFINITY;           // different infinities
  for (auto [rtol, atol, scaled] : {std::tuple{1e-4, 1e-5, false}, {0.0, 0.0, false}, {2e-3, 2e-3, true}, {1.0, 1.0, false}}) {
    auto wide = runtime::compare_tensors_as("t", a, b, rtol, atol, scaled, at::kDouble);
    auto narrow = runtime::compare_tensors_as("t", a, b, rtol, atol, scaled, at::kFloat);
    EXPECT_EQ(narrow.mismatched, wide.mismatched) << rtol;
    EXPECT_EQ(narrow.ok, wide.ok) << rtol;
    EXPECT_TRUE(std::isinf(narrow.max_abs) && std::isinf(wide.max_abs));
    EXPECT_EQ(narrow.max_rel, wide.max_rel);
  }
  for (int i : {11, 12, 13, 14}) a[i] = b[i] = 0;  // finite again: the errors are numbers
  auto wide = runtime::compare_tensors_as("t", a, b, 1e-4, 1e-5, false, at::kDouble);
  auto narrow = runtime::compare_tensors_as("t", a, b, 1e-4, 1e-5, false, at::kFloat);
  EXPECT_EQ(narrow.mismatched, 3);
  EXPECT_EQ(wide.mismatched, 3);
  EXPECT_NEAR(narrow.max_abs, wide.max_abs, 1e-6 * wide.max_abs);
  EXPECT_NEAR(narrow.max_rel, wide.max_rel, 1e-6 * wide.max_rel);
  EXPECT_GT(wide.max_rel, 0);
}

TEST(CompareValues, SizesAndIntegersAndContainers) {
  auto d = compare_tensors("t", at::zeros({2, 3}), at::zeros({3, 2}), 1, 1);
  EXPECT_FALSE(d.ok);
  EXPECT_NE(d.problem.find("sizes"), std::string::npos);
  EXPECT_FALSE(compare_tensors("t", at::tensor({1, 2}), at::tensor({1, 3}), 1, 1).ok);  // integers: exact
  auto tup = [](at::Tensor a, at::Tensor b) { return c10::IValue(c10::ivalue::Tuple::create({a, b})); };
  auto diffs = runtime::compare_values("out", tup(at::ones({2}), at::ones({2})), tup(at::ones({2}), at::zeros({2})), 0, 0);
  ASSERT_EQ(diffs.size(), 2u);
  EXPECT_EQ(diffs[0].what, "out.0");
  EXPECT_TRUE(diffs[0].ok);
  EXPECT_FALSE(diffs[1].ok);
  EXPECT_FALSE(runtime::all_ok(diffs));
}

TEST(CompareValues, CloneIsIndependentOfInPlaceChanges) {
  auto t = at::ones({3});
  auto c = runtime::clone_value(c10::IValue(c10::ivalue::Tuple::create({t})));
  t.add_(1);
  EXPECT_EQ(c.toTupleRef().elements()[0].toTensor().sum().item<float>(), 3.0f);
}

// 16-bit outputs: atol is five spacings of the format (2^-10 float16, 2^-8 bfloat16) relative to
// the output's largest magnitude. A near-zero element 3.5 spacings off (BERT float16 after four layers, eager rounding every op)
// passes; 8 spacings off fails; the rule is the same for every command (compare_to_eager).
TEST(CompareValues, SixteenBitToleranceIsUnitsInTheLastPlace) {
  for (auto dtype : {at::kHalf, at::kBFloat16}) {
    const double ulp = dtype == at::kHalf ? std::ldexp(1.0, -10) : std::ldexp(1.0, -8);
    auto eager = at::tensor({4.0, 0.001, -2.0}, at::kDouble).to(dtype);
    auto near = eager.to(at::kDouble).clone();
    near[1] += 3.5 * ulp * 4.0;
    auto far = eager.to(at::kDouble).clone();
    far[1] += 8.0 * ulp * 4.0;
    EXPECT_TRUE(runtime::compare_to_eager(near.to(dtype), eager).ok) << dtype;
    EXPECT_FALSE(runtime::compare_to_eager(far.to(dtype), eager).ok) << dtype;
  }
}

TEST(CompareValues, ConstantEagerOutputsAreNamedBlind) {
  // An untrained head of zeros makes every output 0: nothing compared against it can fail.
  EXPECT_TRUE(runtime::floating_leaves_constant(c10::IValue(torch::zeros({2, 10}))));
  EXPECT_TRUE(runtime::floating_leaves_constant(c10::IValue(torch::full({3}, 1.5))));
  EXPECT_FALSE(runtime::floating_leaves_constant(c10::IValue(torch::randn({2, 10}))));
  // Containers: constant only when every floating leaf is; integer leaves do not count.
  auto mixed = c10::ivalue::Tuple::create({c10::IValue(torch::zeros({2})), c10::IValue(torch::randn({4}))});
  EXPECT_FALSE(runtime::floating_leaves_constant(c10::IValue(mixed)));
  auto zeros = c10::ivalue::Tuple::create({c10::IValue(torch::zeros({2})), c10::IValue(torch::arange(4))});
  EXPECT_TRUE(runtime::floating_leaves_constant(c10::IValue(zeros)));
  EXPECT_FALSE(runtime::floating_leaves_constant(c10::IValue(torch::arange(4))));
  EXPECT_FALSE(runtime::floating_leaves_constant(c10::IValue(int64_t{3})));
}
