// Comparing a compiled value with its eager reference under stated tolerances (the accuracy
// checker's one notion of "matches"), and deep copies of values a later op could overwrite.
//
// compare_values(what, actual, expected, rtol, atol)
//   post: tensors match when they have the same sizes and every element satisfies
//         |a - b| <= atol + rtol * |b| (torch.allclose), NaN matching NaN, an infinity matching
//         only the same infinity; integer and bool tensors must be equal. Tuples and lists
//         compare element by element; scalars like tensors of one element.
//         max_abs is the largest |a - b| (infinite where only one side is NaN or infinite);
//         max_rel is max_abs over the largest finite |b| (the scale-relative error kiln compile
//         reports).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/model/torch_compat.h"

namespace kiln::runtime {

struct ValueDiff {
  std::string what;           // "output 0", "linear_1"
  bool ok = true;
  double max_abs = 0;
  double max_rel = 0;
  int64_t elements = 0;       // compared
  int64_t mismatched = 0;     // outside the tolerance
  std::string problem;        // when it cannot be compared element-wise (sizes, types)
};

// One entry per tensor or scalar leaf of the values; names are `what`, `what.0`, `what.1.2`, ...
// scale_atol: atol is relative to the leaf's largest finite |expected| (times max(1, that)):
// reduced-precision rounding (TF32; always for float16/bfloat16 leaves) is relative to the values
// that flowed into each element, not to the element, so near-zero elements of a large output get
// the error of its scale.
std::vector<ValueDiff> compare_values(const std::string& what, const c10::IValue& actual, const c10::IValue& expected,
                                      double rtol, double atol, bool scale_atol = false);
// Tensors on one GPU are compared there, in float32 (float64 when either is float64): no copy to the host;
// elsewhere on the host in float64.
ValueDiff compare_tensors(const std::string& what, const at::Tensor& actual, const at::Tensor& expected, double rtol,
                          double atol, bool scale_atol = false);
// The same comparison, floating-point leaves computed in `work` (float64 whenever either side is float64), where the
// two tensors are when they share a device, else on the host.
ValueDiff compare_tensors_as(const std::string& what, const at::Tensor& actual, const at::Tensor& expected, double rtol,
                             double atol, bool scale_atol, at::ScalarType work);
bool all_ok(const std::vector<ValueDiff>& diffs);

// The one tolerance rule every command applies (kiln compile, check, profile, the GEMM race): the
// element-wise test above with (rtol, atol) chosen by the eager value's dtype:
//   float64 1e-7 / 1e-9, float32 1e-4 / 1e-5, float16 1e-2 / 5e-3, bfloat16 2e-2 / 2e-2
//   (16-bit atol: five spacings of the format, 2^-10 / 2^-8, scaled by the output's largest magnitude);
//   integers and bools must be equal. A value with several leaves takes its loosest floating dtype.
struct Tolerance {
  double rtol = 0, atol = 0;
  bool scale_atol = false;  // TF32: atol scales with the output (compare_values)
  std::string str() const;  // "rtol 1e-04, atol 1e-05"
};
// tf32: float32 results went through TF32 (runtime/float_precision.h: tf32_in_effect), whose
// 10-bit mantissa allows rtol 2e-3 and atol 2e-3 scaled by the output's magnitude for float32
// leaves (other dtypes unchanged; float16/bfloat16 atol always scales).
Tolerance tolerance_for(c10::ScalarType dtype, bool tf32 = false);
Tolerance tolerance_for(const c10::IValue& expected, bool tf32 = false);

// The one error measure: over all leaves of a compared value, the largest max_abs and max_rel
// (max_abs over the largest finite |eager|), whether every leaf is within its tolerance, and the
// first leaf's problem (sizes, types) when one could not be compared.
struct ValueError {
  double max_abs = 0, max_rel = 0;
  bool ok = true;
  std::string problem;
};
ValueError value_error(const std::vector<ValueDiff>& diffs);
// compare_values under tolerance_for(expected), summarized.
ValueError compare_to_eager(const c10::IValue& actual, const c10::IValue& expected, bool tf32 = false);

// Whether every floating-point tensor leaf of v holds one value throughout (all zeros, say), so that
// a comparison with it cannot tell a right kernel from a wrong one: untrained weights that a model
// family initializes to zeros (torchvision's ViT head) make the whole output constant. False when v
// has no floating leaf.
bool floating_leaves_constant(const c10::IValue& v);

// Tensors (also inside lists and tuples) copied, so in-place ops run later cannot change them.
c10::IValue clone_value(const c10::IValue& v);

}  // namespace kiln::runtime
