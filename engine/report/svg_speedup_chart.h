// speedup_chart_svg(runs): a horizontal bar chart of each run's speedup over eager, as one inline
// SVG element (no script, no external reference).
//
// post: one bar per run with status "ok" (eager runs with no recorded speedup count as 1.0x), a
//       dashed line at 1.0x, and a "skipped"/"failed" note for the others. Every label is escaped.
//       An empty run list gives an SVG that says so.
#pragma once

#include <string>
#include <vector>

#include "engine/session/session.h"

namespace kiln::report {

std::string speedup_chart_svg(const std::vector<session::Run>& runs);

}  // namespace kiln::report
