// Stable, diffable text forms of a Graph (pure functions; golden-tested).
//
// to_readable(g): FX's print_readable() in spirit — one line per node,
//   `%name : f32[4, 64] = aten::linear(%x, %l1_weight, %l1_bias)`, preceded by a
//   `# sample_models.py:41:12 in l1: y = torch.relu(self.l1(x))` comment whenever the
//   user's source line or module changes. Blocks are indented.
// to_table(g): FX's print_tabular() — opcode, name, target, args, meta, module, source.
#pragma once

#include <string>

#include "engine/ir/graph.h"

namespace kiln::ir {

std::string to_readable(const Graph& g);
std::string to_table(const Graph& g);

}  // namespace kiln::ir
