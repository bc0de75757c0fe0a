// A run's memory, read back from its timeline (written by kiln profile's memory tracker): the bytes
// live over the traced window per device, its peak, and what was live at the peak, per owner (a Kiln
// buffer or extern and the graph node it holds, an eager top-level op, or what was live before the
// window: CUDA-graph pools, caches, a kept output). Used by the HTML timeline, the report's
// "Memory at the peak" tables, the JSON report and the workbench's timeline.
//
// memory_lanes(events): one lane per "memory <device>" lane of the events (order of appearance);
//   points in time order; at_peak largest first. No memory events: an empty list.
// memory_lanes_of_run(s or rows, run): the memory lanes of one run's events (from rows: its memory
//   events only, read once).
// MemoryLanes: memory_lanes gathered event by event: add() the events in stored order, then lanes().
// MemoryPeaks / RunMemoryPeaks: the peaks without the points (below).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "engine/session/session.h"
#include "engine/session/session_rows.h"

namespace kiln::report {

struct MemoryLane {
  std::string lane;                                  // "memory cuda:0"
  std::vector<std::pair<int64_t, int64_t>> points;   // (start_ns, bytes live after it)
  int64_t peak_bytes = 0;                            // the highest point (of the points and the peak record)
  int64_t peak_ns = 0;
  std::vector<std::pair<std::string, int64_t>> at_peak;  // owner, bytes
};

// at_peak with every "layout copy of <weight>" folded into one "layout copies of N weights" entry
// (a convolution network has one per weight), largest first: what the reports table.
std::vector<std::pair<std::string, int64_t>> folded_at_peak(const MemoryLane& lane);
struct MemoryPeak;
std::vector<std::pair<std::string, int64_t>> folded_at_peak(const MemoryPeak& peak);

bool is_memory_event(const session::TimelineEvent& e);
std::vector<MemoryLane> memory_lanes(const std::vector<session::TimelineEvent>& events);
// The memory lanes of run `run` of a session.
std::vector<MemoryLane> memory_lanes_of_run(const session::Session& s, int run);
std::vector<MemoryLane> memory_lanes_of_run(session::SessionRows& rows, int run);

class MemoryLanes {
 public:
  void add(const session::TimelineEvent& e);
  std::vector<MemoryLane> lanes() &&;

 private:
  std::vector<MemoryLane> lanes_;
  std::map<std::string, size_t> index_;
};

// A lane's peak gathered event by event without keeping its points (what the JSON report states):
// add() the events in stored order; lanes() equals memory_lanes(events) in lane, peak_bytes, peak_ns,
// at_peak, and points.size() as samples.
struct MemoryPeak {
  std::string lane;
  size_t samples = 0;
  int64_t peak_bytes = 0;
  int64_t peak_ns = 0;
  std::vector<std::pair<std::string, int64_t>> at_peak;  // owner, bytes; largest first
};
class MemoryPeaks {
 public:
  void add(const session::TimelineEvent& e);
  std::vector<MemoryPeak> lanes() const;

 private:
  struct Lane {
    MemoryPeak peak;
    bool any_point = false;
    int64_t top_bytes = 0, top_ns = 0;  // the largest point, the earliest in time of those
  };
  std::vector<Lane> lanes_;
  std::map<std::string, size_t> index_;
};

// Every run's MemoryPeaks in one pass over a timeline (what the reports table and observe): add()
// every event in stored order; of(run) equals the lanes() of a MemoryPeaks fed that run's events,
// and so memory_lanes_of_run(s, run) in lane, peak_bytes, peak_ns, at_peak and points.size().
class RunMemoryPeaks {
 public:
  void add(const session::TimelineEvent& e);
  std::vector<MemoryPeak> of(int run) const;

 private:
  std::map<int, MemoryPeaks> runs_;
};
RunMemoryPeaks run_memory_peaks(const session::Session& s);

// The "bytes" of a memory event (0 when absent or not an integer).
int64_t bytes_of(const session::TimelineEvent& e);

}  // namespace kiln::report
