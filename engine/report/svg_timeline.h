// timeline_svg(events): one run's timeline as an inline SVG element: one band per lane (in order
// of first appearance), nested spans stacked in rows, instants as ticks, a time axis.
//
// pre:  events belong to one run (any order).
// post: spans narrower than kFoldPx that touch each other in one row are folded into one grey
//       item titled "N spans" (Tracy's rule), so the SVG stays small for long runs; every span and
//       fold carries a <title> tooltip (works without script). All text is escaped. No events gives
//       an SVG that says so.
#pragma once

#include <string>
#include <vector>

#include "engine/session/session.h"

namespace kiln::report {

inline constexpr double kFoldPx = 3.0;

// axis_ns > 0: the time axis spans at least axis_ns from the first event, so that several runs drawn
// with the same axis_ns share one scale.
std::string timeline_svg(const std::vector<session::TimelineEvent>& events, int64_t axis_ns = 0);

// "1.250 ms", "830 us", "12 ns": a duration in the unit that reads best.
std::string duration_text(int64_t ns);

}  // namespace kiln::report
