// What tracing a run's timeline window cost, read back from the run's profiler event (lane "profiler",
// written by `kiln profile`): how the device was recorded (on a GPU), and how much slower the traced
// iterations ran than the untraced ones — so a reader knows how far the timeline's gaps and host spans
// are stretched.
//
// trace_cost_of(e)
//   pre:  e is any timeline event (sessions come from other people: any args_json)
//   post: a value only for a "profiler" event whose args are a JSON object with a numeric "overhead" or a
//         string "error"; fields missing or of another type read as 0 / false / ""; never throws
// trace_cost_text(c)
//   post: one sentence; signed whole percents ("+7 %", "-19 %"); an error is cut to 200 bytes
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "engine/session/session.h"

namespace kiln::report {

struct TraceCost {
  double overhead = 0;          // the traced iterations' median / the untraced median - 1
  int timed_iterations = 0;     // how many traced iterations that median is of (0: not recorded)
  bool cupti = false;           // the device was traced (CUPTI's records); else the host only
  bool graphs_whole = false;    // CUDA graphs recorded one record per replay; kernels from detail iterations
  int graph_records = 0;
  int detail_iterations = 0;    // the iterations after the window that recorded every kernel
  double detail_overhead = 0;   // theirs, against the same untraced median
  double detail_moved_ms = 0;   // how much earlier they are drawn than they ran (right after the window)
  int64_t dropped = 0;          // records CUPTI could not store
  std::string error;            // why tracing did not run ("" when it did)
};

std::optional<TraceCost> trace_cost_of(const session::TimelineEvent& e);
std::string trace_cost_text(const TraceCost& c);

}  // namespace kiln::report
