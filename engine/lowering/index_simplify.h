// Index expressions simplified with what the loops know: each loop variable's extent. A view chain
// (reshape after permute after reshape) leaves loads indexed through floor divisions and modulos of
// flattened indices; on a GPU every one of them is a 64-bit division in every element of the kernel.
// With the extents, most fold away: ((i0*128 + i1) // 128) is i0 when i1 < 128, and
// (x // 8)*8 + x % 8 is x. Floor semantics throughout (Python's //, %), as the generated code has.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/lowering/loop_ir.h"

namespace kiln::lowering {

// A closed integer interval; the bounds saturate at the int64 limits (unbounded).
struct IndexRange {
  int64_t lo = INT64_MIN, hi = INT64_MAX;
  bool within(int64_t a, int64_t b) const { return lo >= a && hi <= b; }
};

// Loop variable k ranges over [0, extents[k]) when extents[k] > 0; unknown otherwise.
IndexRange ie_range(const IExpr& e, const std::vector<int64_t>& extents);

// The same values over the loops' ranges, in fewer operations. Never changes a value.
IExpr ie_simplify(const IExpr& e, const std::vector<int64_t>& extents);

bool ie_equal(const IExpr& a, const IExpr& b);  // structurally

// e with every index expression in it (loads, index functions) simplified over the same extents.
VExpr ve_simplify(const VExpr& e, const std::vector<int64_t>& extents);

}  // namespace kiln::lowering
