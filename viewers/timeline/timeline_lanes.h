// The timeline's events, packed for drawing: lanes (one per thread or stream) grouped in blocks
// (one per run, plus one for compile/import events), events sorted by start, names interned. Per
// frame, visible_items() binary-searches the visible window and folds runs of events narrower than
// 3 px into one item (level of detail).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/api/session.h"
#include "viewers/timeline/timeline_geometry.h"

namespace kiln::viewers {

struct PackedEvent {
  int64_t start = 0;  // ns since its block's first event
  int64_t dur = 0;
  int32_t name = 0;      // index into TimelineData::names
  int32_t category = 0;  // index into TimelineData::names
  int32_t source = -1;   // index into the session's timeline (-1: synthetic)
  int32_t kernel = -1;   // index into TimelineData::names of its kernel (-1: none)
  int32_t region = -1;   // index into TimelineData::names of its compile id (-1: none)
};

// One row of a lane: events that nest inside others (a kernel inside its region, a driver call
// inside a runtime call) go one row deeper, so every row holds events that do not overlap.
struct TimelineLane {
  std::string title;  // "host:123", "cuda:0/stream 7" (the same on every row of a lane)
  int run = -1;
  int depth = 0;      // 0: the lane's first row
  std::vector<PackedEvent> events;  // sorted by start
  int64_t max_dur = 0;              // the longest event (bounds the binary search)
  // A memory lane ("memory cuda:0") has no events: bytes live over time (ns since the block's
  // origin) drawn as a curve, and what was live at its peak (report/memory_view.h).
  std::vector<std::pair<int64_t, int64_t>> memory;
  int64_t memory_peak = 0, memory_peak_at = 0;
  std::vector<std::pair<std::string, int64_t>> at_peak;
  bool is_memory() const { return !memory.empty() || memory_peak > 0; }
};

struct TimelineBlock {
  std::string title;  // "default · kiln"; in a comparison "A · default · kiln"
  int run = -1;       // a Run::id of its side's session
  int side = 0;       // 0: the shown session; 1: the session it is compared with (B)
  int64_t origin = 0;  // the session time (ns) of the block's first event: its events' zero
  std::vector<TimelineLane> lanes;
};

struct TimelineData {
  std::vector<std::string> names;
  std::unordered_map<std::string, int> ids;  // name → index in names
  std::vector<TimelineBlock> blocks;
  int64_t start = 0, end = 0;  // over all events
  int intern(const std::string& s);
  int find(const std::string& s) const;  // -1 when absent
  size_t lane_count() const;
};

// Which events to mark (the selected kernel): kernel and region are name indices; region -1 matches
// any compile id, and an event without one matches any region.
struct EventMark {
  int kernel = -1;
  int region = -1;
  bool matches(const PackedEvent& e) const {
    return kernel >= 0 && e.kernel == kernel && (region < 0 || e.region < 0 || e.region == region);
  }
};

inline constexpr int kMaxLaneDepth = 8;  // deeper events share the last row
TimelineData pack_timeline(const session::Session& s);
// Two sessions on one time axis, each run from its own start: a's blocks (side 0) then b's (side
// 1, their events' sources index b's timeline), titles prefixed "A · " and "B · " (with the labels
// when given: "A a.kiln · default · kiln"); names interned once for both.
TimelineData pack_comparison(const session::Session& a, const session::Session& b, const std::string& label_a = "",
                             const std::string& label_b = "");

// One thing to draw in a lane: an event (count 1) or a fold of `count` narrow neighbours.
struct TimelineItem {
  double x0 = 0, x1 = 0;  // pixels
  int first = 0;          // index of the first event in the lane
  int count = 1;
  bool marked = false;    // holds an event that `mark` matches
};
inline constexpr double kFoldPx = 3.0;
std::vector<TimelineItem> visible_items(const TimelineLane& lane, const TimelineGeometry& g, double width_px,
                                        const EventMark& mark = {});

}  // namespace kiln::viewers
