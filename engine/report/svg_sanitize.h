// sanitize_svg(svg): an SVG document reduced to drawing only, safe to inline in an HTML report.
//
// Graphviz writes some attribute text into its SVG without escaping it (seen: HREF inside HTML-like
// labels in Graphviz 2.42), so its output is treated as untrusted markup and rebuilt from a whitelist:
//  - elements: svg g title desc path polygon polyline ellipse circle rect line text tspan defs
//    linearGradient radialGradient stop. <a> is unwrapped (its children kept, the link dropped);
//    everything else (script, style, foreignObject, image, use, animate, ...) is dropped with its
//    content. Comments, processing instructions, DOCTYPE and CDATA are dropped.
//  - attributes: geometry, paint and font presentation attributes only (no href, no xlink:*, no
//    on*, no style); a value that references anything but a fragment of the same document
//    (url(#id)) is dropped.
//  - text and attribute values are re-escaped; tags are re-balanced, so the output is well-formed
//    whatever the input was (stray close tags ignored, open ones closed at the end).
// post: the result contains no element or attribute outside the whitelist; it never fails.
#pragma once

#include <string>

namespace kiln::report {

std::string sanitize_svg(const std::string& svg);

}  // namespace kiln::report
