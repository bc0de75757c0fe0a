// render_html(session): the whole report as ONE self-contained HTML file (inline CSS and SVG, no
// script, no network): summary and environment, the mode/backend comparison table with a speedup
// bar chart, the deduplicated graph breaks with their source lines and hints, recompile history with
// the failing guards, guards per compiled region, the kernel table (with each kernel's source in a
// collapsible block), graph pictures (Graphviz, when built in) and a timeline picture per run.
// post: every text from the model or an import is HTML-escaped; deterministic for a given session.
//
// render_html(rows) / write_html(rows, out): the same text for a session read row by row
//   (session_rows.h), the latter written to `out` a section (or one run's timeline) at a time. The
//   timeline is read event by event, a few passes (one over every event, one over the report run's,
//   one per drawn run), each keeping a few numbers per event it needs, never the events; the regions
//   and kernels are read into memory once (they grow with the compiled code, not with the runs).
//   Errors of the session file and of `out` pass through (kiln::Error).
#pragma once

#include <string>

#include "engine/base/output_file.h"
#include "engine/session/session.h"
#include "engine/session/session_rows.h"

namespace kiln::report {

std::string render_html(const session::Session& s);
std::string render_html(session::SessionRows& rows);
void write_html(session::SessionRows& rows, OutputSink& out);

}  // namespace kiln::report
