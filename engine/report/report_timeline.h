// What the HTML and Markdown reports read from a session's whole timeline, gathered in one pass over
// its events (SessionRows::each_event) instead of one pass per question; none when the session has
// no runs (every use below is per run).
//
// read_report_timeline(rows)
//   post: shown_run == report_run(rows) (gpu_kernel_stats.h); memory.of(run) the run's memory peaks
//         (memory_view.h); extent[run] = (first start, last end) of the run's events, an event ending
//         at start + max(0, duration); runs without events have no extent; tracing[run] what tracing the
//         run's window cost (trace_cost.h), for runs with a readable profiler event.
#pragma once

#include <cstdint>
#include <map>
#include <utility>

#include "engine/report/memory_view.h"
#include "engine/report/trace_cost.h"
#include "engine/session/session_rows.h"

namespace kiln::report {

struct ReportTimeline {
  int shown_run = -1;
  RunMemoryPeaks memory;
  std::map<int, std::pair<int64_t, int64_t>> extent;
  std::map<int, TraceCost> tracing;
};

ReportTimeline read_report_timeline(session::SessionRows& rows);

}  // namespace kiln::report
