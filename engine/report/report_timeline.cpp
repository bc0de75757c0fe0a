// One pass over a session's timeline for the reports; see report_timeline.h.
#include "engine/report/report_timeline.h"

#include <algorithm>

#include "engine/report/gpu_kernel_stats.h"

namespace kiln::report {

ReportTimeline read_report_timeline(session::SessionRows& rows) {
  ReportTimeline out;
  if (rows.summary().runs.empty()) return out;
  TimedRuns timed;
  rows.each_event(std::nullopt, false, [&](const session::TimelineEvent& e) {
    timed.add(e);
    out.memory.add(e);
    if (auto c = trace_cost_of(e)) out.tracing[e.run] = std::move(*c);
    const int64_t end = e.start_ns + std::max<int64_t>(0, e.dur_ns);
    auto [it, fresh] = out.extent.try_emplace(e.run, e.start_ns, end);
    if (!fresh) {
      it->second.first = std::min(it->second.first, e.start_ns);
      it->second.second = std::max(it->second.second, end);
    }
  });
  out.shown_run = timed.report_run(rows.summary());
  return out;
}

}  // namespace kiln::report
