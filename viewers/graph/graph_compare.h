// The graph view's colouring while two sessions are compared: each drawn box's kernel time in A
// and in B from the comparison's time by module (report::StructureDiff). Pure functions; no Qt.
//
// box_time_change(g, collapsed, structure)
//   post: per drawn box (box_of(node, collapsed)) of a node with a module path known to either
//         side: for a node, the self time of its module (the module's own kernels, not its
//         submodules'; both sides' ModuleTime rows), or of the nearest enclosing module that has a
//         row on either side; for a collapsed module ("module:<path>"), the module's inclusive
//         time (its StructureLine). Times in ms per iteration, negative where a side has no row.
//         Nodes that are not tensors (scalar and shape arithmetic) are left out when the graph
//         records types (any node is a tensor). Boxes of nodes whose module no side has a row for are absent; so is everything when
//         neither side has kernel time.
#pragma once

#include <map>
#include <set>
#include <string>

#include "engine/api/report.h"
#include "viewers/graph/graph_model.h"

namespace kiln::viewers {

struct BoxTimeChange {
  std::string module;         // the module whose time it is ("" = the model's own forward)
  bool inclusive = false;     // with its submodules (a collapsed module)
  double a_ms = -1, b_ms = -1;
};

std::map<std::string, BoxTimeChange> box_time_change(const GraphModel& g, const std::set<std::string>& collapsed,
                                                     const report::StructureDiff& structure);

}  // namespace kiln::viewers
