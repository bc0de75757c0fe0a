// `kiln diff` output: the comparison of two sessions (session_diff.h) as GitHub Markdown, one
// self-contained HTML page, or JSON for scripts.
//
// Sections, in order: the two sides; runs side by side; time by model structure (per module,
// inclusive, in tree order; per source line, longest first; each side's total kernel time per
// iteration and the share its rows attribute); graph breaks added and removed; compiled regions
// whose guards, recompile reason, ops or input shapes differ.
// post: deterministic text (no clock, no paths of this machine but the labels given); every string
//       that came from a session or a log is escaped for its medium (html_escape; Markdown's md()
//       and code spans); the HTML carries the reports' Content-Security-Policy (no script runs).
//       Markdown lists are capped (the longest rows first) with a line saying how many the JSON
//       has; JSON has every row.
#pragma once

#include <string>

#include "engine/report/session_diff.h"

namespace kiln::report {

std::string render_diff_markdown(const SessionDiff& d);
std::string render_diff_html(const SessionDiff& d);
std::string render_diff_json(const SessionDiff& d);

}  // namespace kiln::report
