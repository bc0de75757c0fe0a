// render_markdown(session): a GitHub-flavoured Markdown report, to paste into an issue.
//
// Sections, in order: summary; environment (and model); mode comparison table; graph breaks
// (deduplicated, with source line, reason, hint and hit count); recompile history; guards per
// compiled region; kernel table; import notes when there are any.
// post: deterministic text (no clock, no paths of this machine); model and import text is escaped
//       so that GitHub shows it literally (table pipes, HTML-like text), and code stays in code spans
//       or fenced blocks. Ends with a newline.
#pragma once

#include <string>

#include "engine/session/session.h"

namespace kiln::report {

std::string render_markdown(const session::Session& s);

}  // namespace kiln::report
