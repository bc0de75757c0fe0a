#include "engine/report/memory_view.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

namespace kiln::report {

namespace {

std::vector<std::pair<std::string, int64_t>> folded(const std::vector<std::pair<std::string, int64_t>>& at_peak) {
  static const std::string kCopy = "layout copy of ";
  std::vector<std::pair<std::string, int64_t>> out;
  int copies = 0;
  int64_t copied = 0;
  for (const auto& [owner, b] : at_peak) {
    if (owner.rfind(kCopy, 0) == 0) {
      ++copies;
      copied += b;
    } else {
      out.push_back({owner, b});
    }
  }
  if (copies == 1) {
    for (const auto& e : at_peak)
      if (e.first.rfind(kCopy, 0) == 0) out.push_back(e);
  } else if (copies > 1) {
    out.push_back({"layout copies of " + std::to_string(copies) + " weights", copied});
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  return out;
}

}  // namespace

std::vector<std::pair<std::string, int64_t>> folded_at_peak(const MemoryLane& lane) { return folded(lane.at_peak); }
std::vector<std::pair<std::string, int64_t>> folded_at_peak(const MemoryPeak& peak) { return folded(peak.at_peak); }

bool is_memory_event(const session::TimelineEvent& e) {
  return (e.category == "memory" || e.category == "memory peak") && e.lane.rfind("memory ", 0) == 0;
}

int64_t bytes_of(const session::TimelineEvent& e) {
  // Sessions come from other people: a missing or odd "bytes" is 0, never an exception.
  auto j = nlohmann::json::parse(e.args_json, nullptr, false);
  if (!j.is_object()) return 0;
  auto it = j.find("bytes");
  if (it == j.end() || !it->is_number_integer()) return 0;
  return it->get<int64_t>();
}

std::vector<MemoryLane> memory_lanes_of_run(const session::Session& s, int run) {
  session::SessionInMemory rows(s);
  return memory_lanes_of_run(rows, run);
}

std::vector<MemoryLane> memory_lanes_of_run(session::SessionRows& rows, int run) {
  MemoryLanes lanes;
  rows.each_event(run, true, [&](const session::TimelineEvent& e) { lanes.add(e); });
  return std::move(lanes).lanes();
}

std::vector<MemoryLane> memory_lanes(const std::vector<session::TimelineEvent>& events) {
  MemoryLanes lanes;
  for (const auto& e : events) lanes.add(e);
  return std::move(lanes).lanes();
}

void MemoryLanes::add(const session::TimelineEvent& e) {
  if (!is_memory_event(e)) return;
  auto [it, fresh] = index_.emplace(e.lane, lanes_.size());
  if (fresh) lanes_.push_back(MemoryLane{e.lane, {}, 0, 0, {}});
  MemoryLane& lane = lanes_[it->second];
  const int64_t b = bytes_of(e);
  if (e.category == "memory") {
    lane.points.push_back({e.start_ns, b});
  } else {
    lane.at_peak.push_back({e.name, b});
    lane.peak_ns = e.start_ns;
  }
}

std::vector<MemoryLane> MemoryLanes::lanes() && {
  for (auto& lane : lanes_) {
    std::stable_sort(lane.points.begin(), lane.points.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::stable_sort(lane.at_peak.begin(), lane.at_peak.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    int64_t recorded = 0;
    for (const auto& [owner, b] : lane.at_peak) recorded += b;
    lane.peak_bytes = recorded;
    for (const auto& [t, b] : lane.points)
      if (b > lane.peak_bytes) {
        lane.peak_bytes = b;
        if (lane.at_peak.empty()) lane.peak_ns = t;
      }
  }
  return std::move(lanes_);
}

void MemoryPeaks::add(const session::TimelineEvent& e) {
  if (!is_memory_event(e)) return;
  auto [it, fresh] = index_.emplace(e.lane, lanes_.size());
  if (fresh) {
    lanes_.emplace_back();
    lanes_.back().peak.lane = e.lane;
  }
  Lane& lane = lanes_[it->second];
  const int64_t b = bytes_of(e);
  if (e.category == "memory") {
    ++lane.peak.samples;
    if (!lane.any_point || b > lane.top_bytes || (b == lane.top_bytes && e.start_ns < lane.top_ns)) {
      lane.top_bytes = b;
      lane.top_ns = e.start_ns;
    }
    lane.any_point = true;
  } else {
    lane.peak.at_peak.push_back({e.name, b});
    lane.peak.peak_ns = e.start_ns;
  }
}

std::vector<MemoryPeak> MemoryPeaks::lanes() const {
  // As memory_lanes: the recorded peak's owners, unless a point rose above their sum (then the
  // first point in time at the highest value).
  std::vector<MemoryPeak> out;
  for (const auto& lane : lanes_) {
    MemoryPeak p = lane.peak;
    std::stable_sort(p.at_peak.begin(), p.at_peak.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    int64_t recorded = 0;
    for (const auto& [owner, b] : p.at_peak) recorded += b;
    p.peak_bytes = recorded;
    if (lane.any_point && lane.top_bytes > recorded) {
      p.peak_bytes = lane.top_bytes;
      if (p.at_peak.empty()) p.peak_ns = lane.top_ns;
    }
    out.push_back(std::move(p));
  }
  return out;
}

void RunMemoryPeaks::add(const session::TimelineEvent& e) {
  if (is_memory_event(e)) runs_[e.run].add(e);
}

std::vector<MemoryPeak> RunMemoryPeaks::of(int run) const {
  auto it = runs_.find(run);
  return it == runs_.end() ? std::vector<MemoryPeak>() : it->second.lanes();
}

RunMemoryPeaks run_memory_peaks(const session::Session& s) {
  RunMemoryPeaks peaks;
  for (const auto& e : s.timeline) peaks.add(e);
  return peaks;
}

}  // namespace kiln::report
