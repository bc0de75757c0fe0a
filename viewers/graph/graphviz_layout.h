// graphviz_layout(dot): Graphviz's `dot` layout of a DOT text, read back as plain values for a
// viewer that draws the graph itself. The graph view's one adapter to Graphviz's C library.
//
// pre:  any DOT text (Kiln's own or an imported one; attributes that make Graphviz read files are
//       cleared before layout).
// post: on success `error` is empty and every DOT node has a box, every edge a B-spline (plus its
//       arrow tip), every cluster its box and label; coordinates are points with y growing down,
//       (0, 0) the top-left of the drawing. Otherwise `error` says why in one line.
// Thread-safety: holds report::graphviz_mutex() for the whole call (Graphviz is not thread-safe);
// the graph view calls it from its one layout thread.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace kiln::viewers {

using GraphPoint = std::pair<double, double>;

struct LaidOutBox {
  std::string id;      // DOT node name
  std::string label;   // its label attribute ("" when none)
  double x = 0, y = 0, w = 0, h = 0;  // top-left corner and size
};

struct LaidOutEdge {
  std::string from, to;              // DOT node names
  std::vector<GraphPoint> points;    // cubic B-spline: p0, then (c1, c2, p) triples
  bool has_tip = false;
  GraphPoint tip;                    // where the arrow head points
};

struct LaidOutCluster {
  std::string name;   // subgraph name without the "cluster" prefix
  std::string label;
  int depth = 0;      // 0: a top-level cluster
  double x = 0, y = 0, w = 0, h = 0;
};

struct GraphvizLayout {
  double width = 0, height = 0;
  std::vector<LaidOutBox> boxes;
  std::vector<LaidOutEdge> edges;
  std::vector<LaidOutCluster> clusters;
  std::string error;
};

GraphvizLayout graphviz_layout(const std::string& dot, int max_nodes = 20000);

}  // namespace kiln::viewers
