// Edits of a lowered region's program that keep every reference to a computation right.
//
// insert_comp(region, at, c)
//   pre:  0 <= at <= comps.size(); c refers only to computations before `at`.
//   post: c is computation `at`; every reference to a computation at or after `at` before the call (loads,
//         deps, operands, outputs, tensor_of) names the same computation, now one further on.
#pragma once

#include "engine/lowering/lower_graph.h"

namespace kiln::lowering {

void insert_comp(LoweredRegion& region, int at, Comp c);

}  // namespace kiln::lowering
