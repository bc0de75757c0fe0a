// timeline_svg(events): one run's timeline as an inline SVG element: one band per lane (in order
// of first appearance), nested spans stacked in rows, instants as ticks, a time axis.
//
// pre:  events belong to one run (any order).
// post: spans narrower than kFoldPx that touch each other in one row are folded into one grey
//       item titled "N spans" (Tracy's rule), so the SVG stays small for long runs; every span and
//       fold carries a <title> tooltip (works without script). All text is escaped. No events gives
//       an SVG that says so.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/report/memory_view.h"
#include "engine/report/name_table.h"
#include "engine/session/session.h"

namespace kiln::report {

inline constexpr double kFoldPx = 3.0;

// axis_ns > 0: the time axis spans at least axis_ns from the first event, so that several runs drawn
// with the same axis_ns share one scale.
std::string timeline_svg(const std::vector<session::TimelineEvent>& events, int64_t axis_ns = 0);

// The same picture gathered event by event (a run read row by row from a file): add() the run's
// events in stored order, then svg(axis_ns) once. Each span is kept as its times and its names by
// number, each memory sample as a point, not as the event.
class TimelinePicture {
 public:
  TimelinePicture();
  ~TimelinePicture();
  void add(const session::TimelineEvent& e);
  bool empty() const { return !any_; }
  std::string svg(int64_t axis_ns = 0) &&;

  struct Item;
  struct Lane;

 private:
  bool any_ = false;
  int64_t t0_ = 0, t1_ = 0;
  std::vector<Lane> lanes_;
  std::map<std::string, size_t> index_;
  NameTable names_;
  MemoryLanes memory_;
};

// "1.250 ms", "830 us", "12 ns": a duration in the unit that reads best.
std::string duration_text(int64_t ns);

}  // namespace kiln::report
