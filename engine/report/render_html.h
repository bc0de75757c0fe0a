// render_html(session): the whole report as ONE self-contained HTML file (inline CSS and SVG, no
// script, no network): summary and environment, the mode/backend comparison table with a speedup
// bar chart, the deduplicated graph breaks with their source lines and hints, recompile history with
// the failing guards, guards per compiled region, the kernel table (with each kernel's source in a
// collapsible block), graph pictures (Graphviz, when built in) and a timeline picture per run.
// post: every text from the model or an import is HTML-escaped; deterministic for a given session.
#pragma once

#include <string>

#include "engine/session/session.h"

namespace kiln::report {

std::string render_html(const session::Session& s);

}  // namespace kiln::report
