#include "viewers/timeline/timeline_lanes.h"

#include "engine/api/report.h"

#include <algorithm>
#include <map>
#include <unordered_map>

namespace kiln::viewers {

int TimelineData::intern(const std::string& s) {
  auto it = ids.find(s);
  if (it != ids.end()) return it->second;
  names.push_back(s);
  return ids[s] = static_cast<int>(names.size() - 1);
}

int TimelineData::find(const std::string& s) const {
  auto it = ids.find(s);
  return it == ids.end() ? -1 : it->second;
}

size_t TimelineData::lane_count() const {
  size_t n = 0;
  for (const auto& b : blocks) n += b.lanes.size();
  return n;
}

TimelineData pack_timeline(const session::Session& s) {
  TimelineData d;
  auto intern = [&](const std::string& x) { return d.intern(x); };
  // Blocks in run order; compile/import-wide events (run -1) first.
  std::map<int, size_t> block_of;
  auto block = [&](int run) -> TimelineBlock& {
    auto it = block_of.find(run);
    if (it != block_of.end()) return d.blocks[it->second];
    TimelineBlock b;
    b.run = run;
    b.title = run < 0 ? "compile / import" : "run " + std::to_string(run);
    for (const auto& r : s.runs)
      if (r.id == run) b.title = r.mode + " · " + r.backend + (r.device.empty() ? "" : " · " + r.device);
    block_of[run] = d.blocks.size();
    d.blocks.push_back(std::move(b));
    return d.blocks.back();
  };
  std::map<std::pair<int, std::string>, std::pair<size_t, size_t>> lane_of;  // (run, lane) → (block, lane)
  // Each run was traced on its own clock: its block starts at its first event, so the modes line
  // up for comparison.
  std::map<int, int64_t> origin;
  for (const auto& e : s.timeline) {
    if (e.category == "profiler") continue;
    auto o = origin.find(e.run);
    if (o == origin.end()) origin[e.run] = e.start_ns;
    else o->second = std::min(o->second, e.start_ns);
  }
  bool first = true;
  std::map<int, std::vector<session::TimelineEvent>> memory_of;  // per run: drawn as curves below
  for (size_t i = 0; i < s.timeline.size(); ++i) {
    const auto& e = s.timeline[i];
    if (e.category == "profiler") continue;  // run metadata, not time
    if (report::is_memory_event(e)) {
      memory_of[e.run].push_back(e);
      continue;
    }
    auto key = std::make_pair(e.run, e.lane);
    auto it = lane_of.find(key);
    if (it == lane_of.end()) {
      auto& b = block(e.run);
      size_t bi = block_of[e.run];
      TimelineLane lane;
      lane.title = e.lane;
      lane.run = e.run;
      b.lanes.push_back(std::move(lane));
      it = lane_of.emplace(key, std::make_pair(bi, b.lanes.size() - 1)).first;
    }
    auto& lane = d.blocks[it->second.first].lanes[it->second.second];
    PackedEvent p{e.start_ns - origin[e.run], std::max<int64_t>(0, e.dur_ns), intern(e.name), intern(e.category),
                  static_cast<int32_t>(i), e.kernel.empty() ? -1 : intern(e.kernel),
                  e.compile_id.empty() ? -1 : intern(e.compile_id)};
    lane.events.push_back(p);
    lane.max_dur = std::max(lane.max_dur, p.dur);
    d.start = first ? p.start : std::min(d.start, p.start);
    d.end = first ? p.start + p.dur : std::max(d.end, p.start + p.dur);
    first = false;
  }
  for (auto& [run, events] : memory_of)
    for (const auto& m : report::memory_lanes(events)) {
      TimelineLane lane;
      lane.title = m.lane + " · peak " + report::bytes(m.peak_bytes);
      lane.run = run;
      const int64_t o = origin[run];
      for (const auto& [t, bytes] : m.points) lane.memory.push_back({t - o, bytes});
      lane.memory_peak = m.peak_bytes;
      lane.memory_peak_at = m.peak_ns - o;
      lane.at_peak = report::folded_at_peak(m);  // a weight's layout copies as one entry
      if (!lane.memory.empty()) {
        d.start = first ? lane.memory.front().first : std::min(d.start, lane.memory.front().first);
        d.end = first ? lane.memory.back().first : std::max(d.end, lane.memory.back().first);
        first = false;
      }
      block(run).lanes.push_back(std::move(lane));
    }
  for (auto& b : d.blocks) b.origin = origin[b.run];
  std::stable_sort(d.blocks.begin(), d.blocks.end(), [](const TimelineBlock& a, const TimelineBlock& b) {
    return (a.run < 0 ? -1 : a.run) < (b.run < 0 ? -1 : b.run);
  });
  for (auto& b : d.blocks) {
    // Host lanes first, then device streams, then the rest, each by name.
    std::stable_sort(b.lanes.begin(), b.lanes.end(), [](const TimelineLane& x, const TimelineLane& y) {
      auto rank = [](const std::string& t) { return t.rfind("host", 0) == 0 ? 0 : t.rfind("cuda:", 0) == 0 ? 1 : 2; };
      return std::make_pair(rank(x.title), x.title) < std::make_pair(rank(y.title), y.title);
    });
    std::vector<TimelineLane> rows;
    for (auto& l : b.lanes) {
      if (l.is_memory()) {  // one row: a curve, no nesting
        rows.push_back(std::move(l));
        continue;
      }
      // Longer first at equal starts: the enclosing event takes the shallower row.
      std::stable_sort(l.events.begin(), l.events.end(), [](const PackedEvent& a, const PackedEvent& b) {
        return a.start != b.start ? a.start < b.start : a.dur > b.dur;
      });
      std::vector<TimelineLane> split;
      std::vector<int64_t> open;  // ends of the events enclosing the current one
      for (const auto& e : l.events) {
        while (!open.empty() && open.back() <= e.start) open.pop_back();
        size_t depth = std::min<size_t>(open.size(), kMaxLaneDepth - 1);
        open.push_back(e.start + e.dur);
        while (split.size() <= depth) {
          TimelineLane row;
          row.title = l.title;
          row.run = l.run;
          row.depth = static_cast<int>(split.size());
          split.push_back(std::move(row));
        }
        split[depth].events.push_back(e);
        split[depth].max_dur = std::max(split[depth].max_dur, e.dur);
      }
      for (auto& row : split) rows.push_back(std::move(row));
    }
    b.lanes = std::move(rows);
  }
  return d;
}

TimelineData pack_comparison(const session::Session& a, const session::Session& b, const std::string& label_a,
                             const std::string& label_b) {
  TimelineData d = pack_timeline(a);
  TimelineData other = pack_timeline(b);
  const bool a_events = !d.blocks.empty(), b_events = !other.blocks.empty();
  auto prefix = [](const char* side, const std::string& label) {
    return std::string(side) + (label.empty() ? "" : " " + label) + " · ";
  };
  for (auto& block : d.blocks) block.title = prefix("A", label_a) + block.title;
  std::vector<int32_t> id(other.names.size());
  for (size_t i = 0; i < other.names.size(); ++i) id[i] = d.intern(other.names[i]);
  auto remap = [&](int32_t& x) {
    if (x >= 0) x = id[static_cast<size_t>(x)];
  };
  for (auto& block : other.blocks) {
    block.title = prefix("B", label_b) + block.title;
    block.side = 1;
    for (auto& lane : block.lanes)
      for (auto& e : lane.events) {
        remap(e.name);
        remap(e.category);
        remap(e.kernel);
        remap(e.region);
      }
    d.blocks.push_back(std::move(block));
  }
  if (b_events) {
    d.start = a_events ? std::min(d.start, other.start) : other.start;
    d.end = a_events ? std::max(d.end, other.end) : other.end;
  }
  return d;
}

std::vector<TimelineItem> visible_items(const TimelineLane& lane, const TimelineGeometry& g, double width_px,
                                        const EventMark& mark) {
  std::vector<TimelineItem> out;
  const auto& ev = lane.events;
  double t_lo = g.t_of(0), t_hi = g.t_of(width_px);
  // Events starting before t_lo - max_dur cannot reach the window.
  int64_t from = static_cast<int64_t>(t_lo) - lane.max_dur - 1;
  auto it = std::lower_bound(ev.begin(), ev.end(), from, [](const PackedEvent& e, int64_t t) { return e.start < t; });
  for (auto i = static_cast<int>(it - ev.begin()); i < static_cast<int>(ev.size()); ++i) {
    const auto& e = ev[i];
    if (static_cast<double>(e.start) > t_hi) break;
    if (static_cast<double>(e.start + e.dur) < t_lo) continue;
    double x0 = g.x_of(static_cast<double>(e.start)), x1 = g.x_of(static_cast<double>(e.start + e.dur));
    bool narrow = x1 - x0 < kFoldPx;
    if (narrow && !out.empty() && out.back().x1 - out.back().x0 < kFoldPx * 4 && x0 - out.back().x1 < kFoldPx &&
        (out.back().count > 1 || out.back().x1 - out.back().x0 < kFoldPx)) {
      out.back().x1 = std::max(out.back().x1, x1);
      ++out.back().count;
      out.back().marked |= mark.matches(e);
    } else {
      out.push_back({x0, std::max(x1, x0 + 1), i, 1, mark.matches(e)});
    }
    // Skip ahead: the events starting inside the fold's gap join it without being visited one by
    // one (a binary search per fold step instead of a visit per event). A row's events do not
    // overlap, so only the last of them can be wide; that one is drawn by itself.
    auto& back = out.back();
    if (!narrow || back.x1 - back.x0 >= kFoldPx * 2) continue;
    double limit = std::min(g.t_of(back.x1 + kFoldPx), t_hi);  // never past the window
    auto next = std::lower_bound(ev.begin() + i + 1, ev.end(), limit,
                                 [](const PackedEvent& x, double t) { return static_cast<double>(x.start) < t; });
    int k = static_cast<int>(next - ev.begin()) - 1;
    if (k > i && g.x_of(static_cast<double>(ev[k].start + ev[k].dur)) - g.x_of(static_cast<double>(ev[k].start)) >= kFoldPx)
      --k;
    if (k <= i) continue;
    for (int m = i + 1; mark.kernel >= 0 && m <= k; ++m) back.marked |= mark.matches(ev[m]);
    back.count += k - i;
    back.x1 = std::max(back.x1, g.x_of(static_cast<double>(ev[k].start + ev[k].dur)));
    i = k;
  }
  return out;
}

}  // namespace kiln::viewers
