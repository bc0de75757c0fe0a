// JSON form of a Graph: {"name", "nodes": [{op, name, target, args, kwargs, outputs:[{name, meta}],
// blocks, source:{file,line,col,text}, op_source, module}]}. Stable key order; for scripts and
// the session store.
#pragma once

#include <string>

#include "engine/ir/graph.h"

namespace kiln::ir {

std::string to_json(const Graph& g, int indent = 2);

}  // namespace kiln::ir
