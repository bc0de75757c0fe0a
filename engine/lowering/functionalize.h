// In-place ops (relu_, add_, hardswish_, ...) as their functional forms, with their mutation kept:
// every later use of the mutated value reads the op's result instead.
#pragma once

#include <string>

#include "engine/ir/graph.h"

namespace kiln::lowering {

// Whether target is an in-place aten op ("aten::relu_"; not "aten::__and__").
bool is_inplace_op(const std::string& target);

// The graph with later uses of each in-place op's first argument renamed to the op's result; nodes
// keep their positions. A mutation Kiln cannot rewrite safely (through a view whose base or
// sibling views are read afterwards) throws LoweringError naming the node; a mutated region
// input or parameter is left in place (such an op runs eagerly, on the tensor itself).
ir::Graph functionalize(const ir::Graph& graph);

}  // namespace kiln::lowering
