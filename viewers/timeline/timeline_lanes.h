// The timeline's events, packed for drawing: lanes (one per thread or stream) grouped in blocks
// (one per run, plus one for compile/import events), events sorted by start, names interned. Per
// frame, visible_items() binary-searches the visible window and folds runs of events narrower than
// 3 px into one item (level of detail).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/session/session.h"
#include "viewers/timeline/timeline_geometry.h"

namespace kiln::viewers {

struct PackedEvent {
  int64_t start = 0;  // ns since its block's first event
  int64_t dur = 0;
  int32_t name = 0;      // index into TimelineData::names
  int32_t category = 0;  // index into TimelineData::names
  int32_t source = -1;   // index into the session's timeline (-1: synthetic)
};

struct TimelineLane {
  std::string title;  // "host:123", "cuda:0/stream 7"
  int run = -1;
  std::vector<PackedEvent> events;  // sorted by start
  int64_t max_dur = 0;              // the longest event (bounds the binary search)
};

struct TimelineBlock {
  std::string title;  // "default · kiln"
  int run = -1;
  std::vector<TimelineLane> lanes;
};

struct TimelineData {
  std::vector<std::string> names;
  std::vector<TimelineBlock> blocks;
  int64_t start = 0, end = 0;  // over all events
  int intern(const std::string& s);
  size_t lane_count() const;
};

TimelineData pack_timeline(const session::Session& s);

// One thing to draw in a lane: an event (count 1) or a fold of `count` narrow neighbours.
struct TimelineItem {
  double x0 = 0, x1 = 0;  // pixels
  int first = 0;          // index of the first event in the lane
  int count = 1;
};
inline constexpr double kFoldPx = 3.0;
std::vector<TimelineItem> visible_items(const TimelineLane& lane, const TimelineGeometry& g, double width_px);

}  // namespace kiln::viewers
