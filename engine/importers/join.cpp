// The join works on the merged session only: compile ids are the key, time picks between reuses of
// one id, lane nesting gives host events their region, correlation gives GPU events theirs.
#include "engine/importers/join.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string_view>
#include <unordered_map>

#include "engine/base/in_parts.h"
#include "engine/importers/common/id_index.h"

namespace kiln::importers {

namespace {

// "[0/0]#2" → "0/0"; "[0/0]" → "0/0".
std::string base_id(const std::string& compile_id) {
  if (compile_id.size() < 2 || compile_id[0] != '[') return compile_id;
  size_t close = compile_id.find(']');
  return close == std::string::npos ? compile_id : compile_id.substr(1, close - 1);
}

bool from_profiler(const session::CompiledRegion& r) {  // made by the Kineto importer, not by a compile log
  auto it = r.metrics.find("from");
  return it != r.metrics.end() && it->second == "profiler trace";
}

std::string ms_text(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", ms);
  return buf;
}

}  // namespace

void merge_sessions(session::Session& into, session::Session&& from) {
  int shift = 0;
  for (const auto& r : into.runs) shift = std::max(shift, r.id + 1);
  for (auto& r : from.runs) {
    r.id += shift;
    into.runs.push_back(std::move(r));
  }
  for (auto& e : from.timeline) {
    if (e.run >= 0) e.run += shift;
    into.timeline.push_back(std::move(e));
  }
  auto move_all = [](auto& dst, auto& src) {
    for (auto& x : src) dst.push_back(std::move(x));
  };
  move_all(into.regions, from.regions);
  move_all(into.breaks, from.breaks);
  move_all(into.events, from.events);
  move_all(into.kernels, from.kernels);
  move_all(into.fusion, from.fusion);
  move_all(into.import_notes, from.import_notes);
  if (into.origin.empty()) into.origin = from.origin;
  else if (!from.origin.empty() && into.origin.find(from.origin) == std::string::npos) into.origin += " + " + from.origin;
  auto fill = [](std::string& a, const std::string& b) {
    if (a.empty()) a = b;
  };
  fill(into.env.gpu, from.env.gpu);
  fill(into.env.cuda, from.env.cuda);
  fill(into.env.driver, from.env.driver);
  fill(into.env.libtorch_version, from.env.libtorch_version);
  fill(into.env.created_at, from.env.created_at);
  if (into.model.path.empty()) into.model.path = from.model.path;
  else if (!from.model.path.empty()) into.model.path += " + " + from.model.path;
  if (into.rank < 0) into.rank = from.rank;
}

void join_runtime_to_compile(session::Session& s, unsigned parts) {
  const size_t min_n = parts > 0 ? 0 : 100000;
  auto& tl = s.timeline;

  // Compiled regions by Dynamo id, in compile order, with their start times (epoch ns).
  std::map<std::string, std::vector<std::pair<int64_t, size_t>>> compiled;
  for (size_t i = 0; i < s.regions.size(); ++i) {
    if (from_profiler(s.regions[i])) continue;
    auto it = s.regions[i].metrics.find("start_time");
    int64_t start = it == s.regions[i].metrics.end() ? INT64_MIN : int64_t(std::atof(it->second.c_str()) * 1e9);
    compiled[base_id(s.regions[i].compile_id)].push_back({start, i});
  }

  // 1. Region events → the compile that was live when they ran.
  // 2. Host events inside a region span (same lane) take its compile id. Only lanes holding a
  // region span have anything to take; their events are sorted by (start, longest first) on
  // compact keys, the enclosing span first.
  // (Each pass over the timeline does what it can for every later step: a million events are
  // several cache lines each.)
  struct HostEvent {
    int64_t start, neg_dur;
    size_t index;
    bool operator<(const HostEvent& o) const {  // ties in trace order
      if (start != o.start) return start < o.start;
      return neg_dur != o.neg_dur ? neg_dur < o.neg_dur : index < o.index;
    }
  };
  // The passes over the whole timeline run in parts at once (in_parts_map: one per core for a large
  // timeline); what each part finds comes back in timeline order.
  const auto region_parts = in_parts_map(
      tl.size(),
      [&](size_t begin, size_t end) {
        std::vector<size_t> found;
        for (size_t i = begin; i < end; ++i)
          if (tl[i].category == "region") found.push_back(i);
        return found;
      },
      min_n, parts);
  std::unordered_map<std::string_view, std::vector<HostEvent>> lanes;
  for (const auto& found : region_parts) {
    for (size_t i : found) {
      auto& e = tl[i];
      if (e.lane.rfind("host:", 0) == 0) lanes.emplace(e.lane, std::vector<HostEvent>{});
      if (e.compile_id.empty()) continue;
      auto it = compiled.find(base_id(e.compile_id));
      if (it == compiled.end()) continue;
      size_t pick = it->second.front().second;
      for (const auto& [start, idx] : it->second)
        if (start == INT64_MIN || start <= e.start_ns) pick = idx;
      e.compile_id = s.regions[pick].compile_id;
    }
  }
  if (!lanes.empty()) {
    // Neighbouring events mostly share a lane: looked up again only when it changes.
    using LaneEvents = std::unordered_map<std::string_view, std::vector<HostEvent>>;
    auto lane_parts = in_parts_map(
        tl.size(),
        [&](size_t begin, size_t end) {
          LaneEvents mine;
          for (const auto& [lane, none] : lanes) mine.emplace(lane, std::vector<HostEvent>{});
          std::string_view last_lane;
          std::vector<HostEvent>* last = nullptr;
          for (size_t i = begin; i < end; ++i) {
            if (i == begin || tl[i].lane != last_lane) {
              auto lane = mine.find(tl[i].lane);
              last_lane = tl[i].lane;
              last = lane != mine.end() ? &lane->second : nullptr;
            }
            if (last) last->push_back({tl[i].start_ns, -tl[i].dur_ns, i});
          }
          return mine;
        },
        min_n, parts);
    for (auto& [lane, events] : lanes) {
      size_t total = 0;
      for (const auto& part : lane_parts) total += part.at(lane).size();
      events.reserve(total);
      for (auto& part : lane_parts) {
        auto& found = part.at(lane);
        events.insert(events.end(), found.begin(), found.end());
        std::vector<HostEvent>().swap(found);
      }
    }
  }
  for (auto& lane_events : lanes) {
    auto& events = lane_events.second;  // (a structured binding cannot be captured in C++17)
    // Sorted in parts at once, then the sorted runs merged (a large lane holds most host events).
    std::vector<size_t> runs = in_parts_map(
        events.size(),
        [&](size_t begin, size_t end) {
          std::sort(events.begin() + static_cast<std::ptrdiff_t>(begin), events.begin() + static_cast<std::ptrdiff_t>(end));
          return begin;
        },
        min_n, parts);
    runs.push_back(events.size());
    for (size_t width = 1; width + 1 < runs.size(); width *= 2)  // runs[i] .. runs[i + width] is sorted
      for (size_t i = 0; i + width + 1 < runs.size(); i += 2 * width) {
        const size_t last = std::min(i + 2 * width, runs.size() - 1);
        std::inplace_merge(events.begin() + static_cast<std::ptrdiff_t>(runs[i]),
                           events.begin() + static_cast<std::ptrdiff_t>(runs[i + width]),
                           events.begin() + static_cast<std::ptrdiff_t>(runs[last]));
      }
    std::vector<size_t> open;  // region spans containing the current time, innermost last
    for (const auto& h : events) {
      const size_t i = h.index;
      while (!open.empty() && tl[open.back()].start_ns + tl[open.back()].dur_ns < tl[i].start_ns) open.pop_back();
      if (tl[i].category == "region") {
        open.push_back(i);
      } else if (!open.empty() && tl[i].compile_id.empty()) {
        tl[i].compile_id = tl[open.back()].compile_id;
      }
    }
  }

  // 3. GPU events take the compile id of the call that launched them.
  // (Only launches that carry a compile id have one to give; the first launch of a correlation counts.)
  const auto launch_parts = in_parts_map(
      tl.size(),
      [&](size_t begin, size_t end) {
        std::vector<std::pair<int64_t, size_t>> found;
        for (size_t i = begin; i < end; ++i)
          if (tl[i].correlation >= 0 && !tl[i].compile_id.empty() && tl[i].lane.rfind("host:", 0) == 0)
            found.emplace_back(tl[i].correlation, i);
        return found;
      },
      min_n, parts);
  IdIndex launch_of;
  for (const auto& found : launch_parts)
    for (const auto& [correlation, i] : found) launch_of.emplace(correlation, i);
  // 4. Triton kernels → their generated Kernel records.
  std::map<std::string, std::vector<size_t>> by_name;  // name → the generated kernels of that name
  for (size_t i = 0; i < s.kernels.size(); ++i)
    if (!s.kernels[i].source.empty()) by_name[s.kernels[i].name].push_back(i);
  // A profiler-only kernel record takes the compile id its launches agree on.
  struct Found {
    std::map<std::string, std::string> launched_in;                      // kernel → compile id ("?": they disagree)
    std::unordered_map<std::string, std::pair<int64_t, int64_t>> calls;  // 5. compile id → (count, ns)
  };
  // The launches read here (3.) are host events with a compile id: no part writes those.
  auto event_parts = in_parts_map(
      tl.size(),
      [&](size_t begin, size_t end) {
        Found f;
        for (size_t i = begin; i < end; ++i) {
          auto& e = tl[i];
          // 3.
          if (!launch_of.empty() && e.correlation >= 0 && e.compile_id.empty() && e.lane.rfind("host:", 0) != 0) {
            const size_t launch = launch_of.find(e.correlation);
            if (launch != IdIndex::kAbsent) e.compile_id = tl[launch].compile_id;
          }
          // 4.
          if (!e.kernel.empty()) {
            // A launch of a kernel generated under another compile id (or none) takes the only
            // generated kernel's of that name.
            auto named = by_name.find(e.kernel);
            if (named != by_name.end() && named->second.size() == 1 && e.compile_id.empty() &&
                !s.kernels[named->second.front()].compile_id.empty())
              e.compile_id = s.kernels[named->second.front()].compile_id;
            if (!e.compile_id.empty()) {
              auto it = f.launched_in.find(e.kernel);
              if (it == f.launched_in.end()) f.launched_in.emplace(e.kernel, e.compile_id);
              else if (it->second != e.compile_id) it->second = "?";
            }
          }
          // 5.
          if (e.category == "region" && !e.compile_id.empty()) {
            auto& c = f.calls[e.compile_id];
            ++c.first;
            c.second += e.dur_ns;
          }
        }
        return f;
      },
      min_n, parts);
  std::map<std::string, std::string> launched_in;
  std::unordered_map<std::string, std::pair<int64_t, int64_t>> calls;
  for (auto& f : event_parts) {
    for (auto& [kernel, id] : f.launched_in) {
      auto [it, fresh] = launched_in.emplace(kernel, id);
      if (!fresh && it->second != id) it->second = "?";
    }
    for (const auto& [id, c] : f.calls) {
      auto& sum = calls[id];
      sum.first += c.first;
      sum.second += c.second;
    }
  }
  s.kernels.erase(std::remove_if(s.kernels.begin(), s.kernels.end(),
                                 [&](const session::Kernel& k) { return k.source.empty() && by_name.count(k.name); }),
                  s.kernels.end());
  for (auto& k : s.kernels) {
    auto it = launched_in.find(k.name);
    if (k.compile_id.empty() && it != launched_in.end() && it->second != "?") k.compile_id = it->second;
  }

  // 5. Region calls → hits; profiler-only duplicates of compiled regions go.
  s.regions.erase(std::remove_if(s.regions.begin(), s.regions.end(),
                                 [&](const session::CompiledRegion& r) {
                                   return from_profiler(r) && compiled.count(base_id(r.compile_id));
                                 }),
                  s.regions.end());
  for (auto& r : s.regions) {
    auto it = calls.find(r.compile_id);
    if (it == calls.end()) continue;
    r.hits = it->second.first;
    r.metrics["runtime calls"] = std::to_string(it->second.first);
    r.metrics["runtime total ms"] = ms_text(double(it->second.second) / 1e6);
    r.metrics["runtime mean ms"] = ms_text(double(it->second.second) / 1e6 / double(it->second.first));
  }
}

}  // namespace kiln::importers
