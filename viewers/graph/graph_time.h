// Where a run's time went, as the graph view shows it: per kernel, per node, per drawn box
// (collapsed modules get the share of their nodes), and which region to open first. Pure functions
// of session values; no Qt.
#pragma once

#include <map>
#include <set>
#include <string>

#include "engine/api/session.h"
#include "viewers/graph/graph_model.h"

namespace kiln::viewers {

// The run's time per kernel name in region `compile_id`: kernel and extern events, device lanes
// only when the run has any (else host lanes); events without a compile id count for every region.
// Extern calls are keyed by their op ("aten::conv2d").
std::map<std::string, double> kernel_time_ns(const session::Session& s, int run, const std::string& compile_id);

// The run whose time the view shows for region `compile_id`: `preferred` when it has kernel time
// there, else the first run (by id order in the session) that has; -1 when none has.
int timed_run(const session::Session& s, int preferred, const std::string& compile_id);

// Time per node: a kernel's time split evenly over its nodes in `g` (`kernel_of`: node → kernel);
// an extern op's time ("aten::conv2d") split evenly over the nodes with that target that are in
// no kernel. Nodes with no time are absent.
std::map<std::string, double> node_time_ns(const GraphModel& g, const std::map<std::string, std::string>& kernel_of,
                                           const std::map<std::string, double>& kernel_ns);

// Share of the total node time per drawn box (a node name or "module:<path>" for a collapsed
// module): values in [0, 1] summing to 1 over all boxes when any node has time; empty otherwise.
std::map<std::string, double> box_time_share(const GraphModel& g, const std::set<std::string>& collapsed,
                                             const std::map<std::string, double>& node_ns);

// The region to open first: the one where the run (timed_run(s, run, "")) spent the most kernel
// time, else the one with the most graph nodes; "" when the session has no regions.
std::string slowest_region(const session::Session& s, int run);

// A region's node count: nodes of its first stage with a JSON graph, else assignments in its first
// stage of FX graph code (or its first stage).
int region_node_count(const session::CompiledRegion& r);

}  // namespace kiln::viewers
