// dot_to_svg(dot): Graphviz's `dot` layout of a DOT text, as an SVG element to inline in HTML.
// The report's adapter to Graphviz's C library (libgvc, libcgraph).
//
// post: on success, svg holds one <svg ...>...</svg> element (no XML prolog, no DOCTYPE) and error
//       is empty; otherwise svg is empty and error says why in one line ("Graphviz is not built
//       in", "DOT does not parse: ...", "graph too large to draw (N nodes)").
// Attributes that make Graphviz read files or emit links (URL, href, image, shapefile, imagepath,
// stylesheet, ...) are cleared and HTML-like labels reduced to their text before layout, and the
// SVG Graphviz writes is rebuilt from a whitelist (svg_sanitize.h), so untrusted DOT stays inert.
// Calls are serialised: Graphviz is not thread-safe.
#pragma once

#include <mutex>
#include <string>

namespace kiln::report {

struct SvgResult {
  std::string svg;
  std::string error;
};

inline constexpr int kMaxDrawnNodes = 400;  // larger graphs are listed, not drawn

SvgResult dot_to_svg(const std::string& dot);
bool graphviz_available();
// Held around every Graphviz call in the process (here and in viewers that lay out graphs).
std::mutex& graphviz_mutex();

}  // namespace kiln::report
