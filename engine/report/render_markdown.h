// render_markdown(session): a GitHub-flavoured Markdown report, to paste into an issue.
//
// Sections, in order: summary; environment (and model); mode comparison table; graph breaks
// (deduplicated, with source line, reason, hint and hit count); recompile history; guards per
// compiled region; kernel table; import notes when there are any.
// post: deterministic text (no clock, no paths of this machine); model and import text is escaped
//       so that GitHub shows it literally (table pipes, HTML-like text), and code stays in code spans
//       or fenced blocks. Ends with a newline.
//
// render_markdown(rows): the same text for a session read row by row (session_rows.h): the timeline
//   is read event by event (one pass over every event, one over the report run's), keeping a few
//   numbers per event it needs, never the events; the regions and kernels are read into memory once
//   (they grow with the compiled code, not with the runs). Errors of the session file pass through.
#pragma once

#include <string>

#include "engine/session/session.h"
#include "engine/session/session_rows.h"

namespace kiln::report {

std::string render_markdown(const session::Session& s);
std::string render_markdown(session::SessionRows& rows);

}  // namespace kiln::report
