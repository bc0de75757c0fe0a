// Joins GPU activity records with Kiln's host spans into timeline events and per-run figures.
//
// Attribution, in order: a device record's correlation id names the runtime/driver call that
// launched it; that call lies inside Kiln's innermost host span (kernel, extern, region) on the
// launching thread, which names the Kiln kernel and compile id. A generated kernel whose device
// name is a known Kiln kernel name is attributed by name (this is how kernels replayed from a CUDA
// graph, all sharing the graph launch's correlation id, find their kernel).
//
// Pre: records and spans on one clock (ns since the host trace began). Post: one TimelineEvent per
// record (lane "cuda:<device>/stream <s>" for device work, "cuda api" for calls), `run` left -1.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "engine/profile/gpu_activity.h"
#include "engine/profile/host_trace.h"
#include "engine/records/records.h"

namespace kiln::profile {

struct GpuFigures {
  int kernels = 0;              // device kernels in the window
  int attributed = 0;           // of those, linked to a Kiln kernel or extern span
  int graph_kernels = 0;        // launched from CUDA graphs
  int graph_launches = 0;       // graph-level records: a whole graph's execution each (its kernels unrecorded)
  double busy_fraction = 0;     // union of device activity / window length
  double mean_gap_ms = 0;       // mean idle gap between consecutive device activities
  int64_t window_ns = 0;        // first host span start .. last device end
};

std::vector<records::TimelineEvent> gpu_timeline(const std::vector<GpuActivity>& records,
                                                 const std::vector<HostSpan>& spans,
                                                 const std::set<std::string>& kiln_kernels, GpuFigures* figures);

// Iterations traced after the window (kiln profile's kernel detail, after the CUDA graphs were recorded again:
// milliseconds in which nothing is traced) are drawn right after it: their host spans and device records
// move earlier by one amount, so that the first of them starts `gap_ns` after `window_end_ns`.
// Post: returns the amount (0, nothing moved, when they start within gap_ns of the window's end already);
// relative times inside the iterations are unchanged.
int64_t move_next_to_window(int64_t window_end_ns, int64_t gap_ns, std::vector<HostSpan>& spans,
                            std::vector<GpuActivity>& records);

// Keeps the records that start in [from_ns, to_ns): a trace's calls made aside (before its iterations) and
// iterations only timed (after the drawn ones) leave no records.
void keep_records_between(std::vector<GpuActivity>& records, int64_t from_ns, int64_t to_ns = INT64_MAX);

}  // namespace kiln::profile
