// dot_to_svg(dot): Graphviz's `dot` layout of a DOT text, as an SVG element to inline in HTML.
// The one file that talks to Graphviz's C library (libgvc, libcgraph).
//
// post: on success, svg holds one <svg ...>...</svg> element (no XML prolog, no DOCTYPE) and error
//       is empty; otherwise svg is empty and error says why in one line ("Graphviz is not built
//       in", "DOT does not parse: ...", "graph too large to draw (N nodes)").
// Attributes that make Graphviz read files or emit links (URL, href, image, shapefile, imagepath,
// stylesheet, ...) are cleared before layout, so untrusted DOT (from an import) stays inert.
// Calls are serialised: Graphviz is not thread-safe.
#pragma once

#include <string>

namespace kiln::report {

struct SvgResult {
  std::string svg;
  std::string error;
};

inline constexpr int kMaxDrawnNodes = 400;  // larger graphs are listed, not drawn

SvgResult dot_to_svg(const std::string& dot);
// The same layout in Graphviz's "plain" text format (node positions and sizes, edge control
// points, in inches), for viewers that draw the graph themselves. Result in .svg (the text).
SvgResult dot_layout_plain(const std::string& dot, int max_nodes = 20000);
bool graphviz_available();

}  // namespace kiln::report
