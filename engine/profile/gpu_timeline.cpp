#include "engine/profile/gpu_timeline.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "engine/base/json_text.h"

namespace kiln::profile {

const char* gpu_activity_kind_name(GpuActivityKind k) {
  switch (k) {
    case GpuActivityKind::Kernel: return "kernel";
    case GpuActivityKind::Memcpy: return "memcpy";
    case GpuActivityKind::Memset: return "memset";
    case GpuActivityKind::Runtime: return "cuda_runtime";
    case GpuActivityKind::Driver: return "cuda_driver";
    case GpuActivityKind::Sync: return "sync";
    case GpuActivityKind::Marker: return "nvtx";
    case GpuActivityKind::Graph: return "graph";
  }
  return "gpu";
}

namespace {

bool is_device_work(GpuActivityKind k) {
  return k == GpuActivityKind::Kernel || k == GpuActivityKind::Memcpy || k == GpuActivityKind::Memset ||
         k == GpuActivityKind::Graph;
}

struct Attribution {
  std::string kernel;
  std::string compile_id;
};

// The innermost launching span (kernel/extern, else region) containing [start, end].
const HostSpan* launching_span(const std::vector<const HostSpan*>& sorted, int64_t start, int64_t end) {
  const HostSpan* best = nullptr;
  auto it = std::upper_bound(sorted.begin(), sorted.end(), start,
                             [](int64_t t, const HostSpan* s) { return t < s->start_ns; });
  // Spans are sorted by start; walk back over those that began before the call.
  for (auto rit = std::make_reverse_iterator(it); rit != sorted.rend(); ++rit) {
    const HostSpan* s = *rit;
    if (s->start_ns + s->dur_ns < end) continue;
    if (!best || s->depth > best->depth) best = s;
    if (s->depth == 0) break;  // an enclosing top-level span: nothing earlier can be inside it
  }
  return best;
}

// What a launch inside span s belongs to: a kernel or extern span names it; a region span gives its compile id.
Attribution attribution_of(const HostSpan& s) {
  Attribution a;
  a.kernel = s.kernel.empty() && s.category != "region" ? s.name : s.kernel;
  a.compile_id = s.compile_id;
  return a;
}

}  // namespace

std::vector<records::TimelineEvent> gpu_timeline(const std::vector<GpuActivity>& records,
                                                 const std::vector<HostSpan>& spans,
                                                 const std::set<std::string>& kiln_kernels, GpuFigures* figures) {
  std::vector<const HostSpan*> launchers;
  int64_t window_start = -1;
  for (const auto& s : spans) {
    if (window_start < 0 || s.start_ns < window_start) window_start = s.start_ns;
    if (s.category == "kernel" || s.category == "extern" || s.category == "region" || s.category == "fallback")
      launchers.push_back(&s);
  }
  std::stable_sort(launchers.begin(), launchers.end(),
                   [](const HostSpan* a, const HostSpan* b) { return a->start_ns < b->start_ns; });

  // Correlation id → what the launching call belonged to.
  std::map<uint32_t, Attribution> by_correlation;
  for (const auto& r : records) {
    if (r.kind != GpuActivityKind::Runtime && r.kind != GpuActivityKind::Driver) continue;
    if (const HostSpan* s = launching_span(launchers, r.start_ns, r.end_ns)) {
      auto& slot = by_correlation[r.correlation];
      if (slot.kernel.empty() && slot.compile_id.empty()) slot = attribution_of(*s);
    }
  }

  // A device record whose launching call left no record (a launch API CUPTI was not asked to record):
  // it was launched after the recorded call just before it in the launch order (correlation
  // ids count calls) and before the one just after it, so inside the innermost span holding both.
  std::vector<const GpuActivity*> calls;
  for (const auto& r : records)
    if (r.kind == GpuActivityKind::Runtime || r.kind == GpuActivityKind::Driver) calls.push_back(&r);
  std::sort(calls.begin(), calls.end(), [](const GpuActivity* a, const GpuActivity* b) { return a->correlation < b->correlation; });
  auto bracketed = [&](uint32_t correlation) -> std::optional<Attribution> {
    auto next = std::upper_bound(calls.begin(), calls.end(), correlation,
                                 [](uint32_t c, const GpuActivity* a) { return c < a->correlation; });
    if (next == calls.begin() || next == calls.end()) return std::nullopt;
    const GpuActivity* before = *(next - 1);
    if (before->correlation == correlation) return std::nullopt;  // its own call: attributed above
    const HostSpan* s = launching_span(launchers, before->end_ns, (*next)->start_ns);
    if (!s) return std::nullopt;
    return attribution_of(*s);
  };

  std::vector<records::TimelineEvent> out;
  out.reserve(records.size());
  GpuFigures f;
  std::vector<std::pair<int64_t, int64_t>> busy;
  for (const auto& r : records) {
    records::TimelineEvent e;
    e.name = r.name;
    e.category = gpu_activity_kind_name(r.kind);
    e.start_ns = r.start_ns;
    e.dur_ns = std::max<int64_t>(0, r.end_ns - r.start_ns);
    e.correlation = r.correlation;
    nlohmann::json args = nlohmann::json::object();
    if (is_device_work(r.kind)) {
      e.lane = "cuda:" + std::to_string(r.device) + "/stream " + std::to_string(r.stream);
      busy.push_back({r.start_ns, r.end_ns});
    } else if (r.kind == GpuActivityKind::Marker) {
      e.lane = "nvtx";
    } else {
      e.lane = "cuda api";
      args["thread"] = r.thread;
    }
    if (r.kind == GpuActivityKind::Kernel) {
      ++f.kernels;
      if (r.graph_node) {
        ++f.graph_kernels;
        args["graph_node"] = r.graph_node;
        args["graph"] = r.graph_id;
      }
      args["grid"] = {r.grid[0], r.grid[1], r.grid[2]};
      args["block"] = {r.block[0], r.block[1], r.block[2]};
      args["registers"] = r.registers;
      args["shared_bytes"] = r.shared_bytes;
    }
    if (r.kind == GpuActivityKind::Graph) {
      ++f.graph_launches;
      args["graph"] = r.graph_id;
    }
    if (r.kind == GpuActivityKind::Memcpy || r.kind == GpuActivityKind::Memset) args["bytes"] = r.bytes;
    if (is_device_work(r.kind) || r.kind == GpuActivityKind::Runtime || r.kind == GpuActivityKind::Driver) {
      auto it = by_correlation.find(r.correlation);
      if (it != by_correlation.end()) {
        e.kernel = it->second.kernel;
        e.compile_id = it->second.compile_id;
      } else if (is_device_work(r.kind)) {
        if (auto a = bracketed(r.correlation)) {
          e.kernel = a->kernel;
          e.compile_id = a->compile_id;
        }
      }
      if (r.kind == GpuActivityKind::Kernel && kiln_kernels.count(r.name)) e.kernel = r.name;
      if (r.kind == GpuActivityKind::Kernel && !e.kernel.empty()) ++f.attributed;
    }
    if (!args.empty()) e.args_json = safe_dump(args);
    out.push_back(std::move(e));
  }

  if (!busy.empty()) {
    std::sort(busy.begin(), busy.end());
    int64_t covered = 0, gaps = 0, n_gaps = 0;
    int64_t cur_s = busy.front().first, cur_e = busy.front().second;
    for (size_t i = 1; i < busy.size(); ++i) {
      if (busy[i].first <= cur_e) {
        cur_e = std::max(cur_e, busy[i].second);
        continue;
      }
      covered += cur_e - cur_s;
      gaps += busy[i].first - cur_e;
      ++n_gaps;
      cur_s = busy[i].first;
      cur_e = busy[i].second;
    }
    covered += cur_e - cur_s;
    int64_t start = window_start >= 0 ? std::min(window_start, busy.front().first) : busy.front().first;
    int64_t end = cur_e;
    for (const auto& s : spans) end = std::max(end, s.start_ns + s.dur_ns);
    f.window_ns = end - start;
    f.busy_fraction = f.window_ns > 0 ? static_cast<double>(covered) / static_cast<double>(f.window_ns) : 0;
    f.mean_gap_ms = n_gaps ? static_cast<double>(gaps) / n_gaps / 1e6 : 0;
  }
  if (figures) *figures = f;
  return out;
}

int64_t move_next_to_window(int64_t window_end_ns, int64_t gap_ns, std::vector<HostSpan>& spans,
                            std::vector<GpuActivity>& records) {
  int64_t first = INT64_MAX;
  for (const auto& s : spans) first = std::min(first, s.start_ns);
  for (const auto& r : records) first = std::min(first, r.start_ns);
  if (first == INT64_MAX || first - window_end_ns <= gap_ns) return 0;
  const int64_t shift = first - window_end_ns - gap_ns;
  for (auto& s : spans) s.start_ns -= shift;
  for (auto& r : records) {
    r.start_ns -= shift;
    r.end_ns -= shift;
  }
  return shift;
}

void keep_records_between(std::vector<GpuActivity>& records, int64_t from_ns, int64_t to_ns) {
  records.erase(std::remove_if(records.begin(), records.end(),
                               [&](const GpuActivity& a) { return a.start_ns < from_ns || a.start_ns >= to_ns; }),
                records.end());
}

}  // namespace kiln::profile
