// The graph view's data, without Qt: a stage graph parsed from Kiln's IR JSON, the DOT that lays it
// out (nn.Module paths as nested clusters, collapsed ones as one box), and its layout.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "viewers/graph/graphviz_layout.h"

namespace kiln::viewers {

struct GraphNode {
  std::string name;    // "linear_1"
  std::string op;      // "call_function", "placeholder", "get_attr", "output"
  std::string target;  // "aten::linear"
  std::string shape;   // "f32[2, 16, 192]"
  std::string module;  // "ff.fc1"
  bool tensor = false; // its first output is a tensor (not a scalar, list or shape)
  std::vector<int> inputs;
  std::vector<std::string> params;  // folded get_attr inputs: "weight f32[64, 64]" (fold_parameters)
};

struct GraphModel {
  std::vector<GraphNode> nodes;
  std::map<std::string, int> index;  // name → position
  std::map<std::string, std::string> folded;  // folded get_attr node → the first node it was folded into
};

// Kiln's ir::to_json form; throws kiln::Error naming what is wrong.
GraphModel parse_graph_json(const std::string& json);

// Parameters and buffers folded into the nodes that use them (as Netron draws them): every get_attr
// node is removed with its edges, and each consumer lists it in `params` as "<last name part>
// <shape>" ("weight f32[64, 3, 7, 7]"; "const ..." for TorchScript's numbered constants), in
// argument order. get_attr nodes nobody uses are dropped.
// post: no get_attr node is left; `folded` maps each removed node to its first consumer; inputs
//       and index are renumbered; the relative order of the other nodes is kept.
GraphModel fold_parameters(const GraphModel& g);

// Graphs above `threshold` nodes start collapsed at the shallowest module depth that has at least
// 8 modules (or the deepest one).
inline constexpr int kCollapseThreshold = 200;
std::set<std::string> default_collapsed(const GraphModel& g, int threshold = kCollapseThreshold);

// A node's folded parameters on one line: "weight f32[64, 64], bias f32[64]"; past three, the
// first two and "+N more" ("" when none). The box's tooltip lists them all.
std::string params_text(const GraphNode& n);

// The box a node is drawn in: its own, or the outermost collapsed module containing it
// ("module:<path>").
std::string box_of(const GraphNode& n, const std::set<std::string>& collapsed);

struct GraphDot {
  std::string dot;
  std::vector<std::string> boxes;  // DOT node "b<i>" is boxes[i] (a node name or "module:<path>")
  std::map<std::string, int> members;  // "module:<path>" → nodes inside (collapsed boxes)
};
GraphDot graph_dot(const GraphModel& g, const std::set<std::string>& collapsed);

// A laid-out graph_dot(): box ids are node names or "module:<path>", clusters are module paths.
using GraphLayout = GraphvizLayout;
// graph_dot + graphviz_layout, with the DOT ids mapped back through GraphDot::boxes.
GraphLayout layout_graph(const GraphModel& g, const std::set<std::string>& collapsed);

}  // namespace kiln::viewers
