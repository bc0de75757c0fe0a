// Graphviz DOT form of a Graph: one box per node (op and shape), data edges, nn.Module paths
// as nested clusters, control-flow blocks as dashed clusters. Every string from the model is
// escaped, so the text always parses with `dot`.
#pragma once

#include <string>

#include "engine/ir/graph.h"

namespace kiln::ir {

std::string to_dot(const Graph& g);

// A DOT double-quoted string literal with everything escaped (quotes included).
std::string dot_quote(const std::string& s);

}  // namespace kiln::ir
