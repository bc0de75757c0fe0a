// Break costs of imported torch.compile runs; see imported_break_costs.h.
#include "engine/importers/imported_break_costs.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>

namespace kiln::importers {

namespace {

using session::TimelineEvent;

int64_t end_of(const TimelineEvent& e) { return e.start_ns + e.dur_ns; }

bool on_device(const TimelineEvent& e) {
  return e.category == "kernel" || e.category == "memcpy" || e.category == "memset";
}

// A resume function Dynamo made for a break at `line` of `file`: its frame reads
// "torch_dynamo_resume_in_<fn>_at_<line> at <file>:<first line>".
bool resumes_at(const session::CompiledRegion& r, const std::string& file, int line) {
  const std::string& f = r.frame;
  if (f.rfind("torch_dynamo_resume_in_", 0) != 0) return false;
  const std::string at = "_at_" + std::to_string(line) + " ";
  const size_t p = f.find(at);
  if (p == std::string::npos || f.find(' ') != p + at.size() - 1) return false;
  return file.empty() || f.find(" at " + file + ":", p) != std::string::npos;
}

}  // namespace

std::vector<session::BreakCost> measure_imported_break_costs(const session::Session& s) {
  if (s.breaks.empty()) return {};
  std::vector<session::BreakCost> sites;
  std::vector<std::set<std::string>> ended;  // per site: the compile ids its breaks ended
  std::map<std::string, size_t> index;
  const int run = s.runs.empty() ? -1 : s.runs.front().id;
  for (const auto& r : s.breaks) {
    auto [it, fresh] = index.emplace(session::break_site_key(r), sites.size());
    if (fresh) {
      sites.push_back(session::break_cost_site(r, run));
      ended.emplace_back();
    }
    if (!r.compile_id.empty()) ended[it->second].insert(r.compile_id);
  }
  for (auto& c : sites) {
    if (c.line <= 0) continue;
    for (const auto& region : s.regions)
      if (resumes_at(region, c.file, c.line)) {
        c.compile_ms += region.compile_ms;
        ++c.compiles;
      }
  }

  // The profiler's side: steps, region spans by host lane, device work by launch correlation.
  std::vector<const TimelineEvent*> steps;
  std::map<std::string, std::vector<const TimelineEvent*>> regions;
  std::map<int64_t, double> device_ns_of;  // correlation → device time
  bool profiled = false;
  for (const auto& e : s.timeline) {
    if (e.category == "step") steps.push_back(&e);
    if (e.category == "region") {
      regions[e.lane].push_back(&e);
      profiled = true;
    }
    if (on_device(e)) {
      profiled = true;
      if (e.correlation >= 0) device_ns_of[e.correlation] += static_cast<double>(e.dur_ns);
    }
    if (e.category == "cpu_op" || e.category == "cuda_runtime") profiled = true;
  }
  std::vector<const TimelineEvent*> launches;  // host events that launched device work
  for (const auto& e : s.timeline)
    if (!on_device(e) && e.correlation >= 0 && device_ns_of.count(e.correlation)) launches.push_back(&e);
  for (auto& [lane, spans] : regions)
    std::stable_sort(spans.begin(), spans.end(), [](const auto* a, const auto* b) { return a->start_ns < b->start_ns; });

  double step_ns = 0;
  for (const auto* st : steps) step_ns += static_cast<double>(st->dur_ns);
  for (size_t k = 0; k < sites.size(); ++k) {
    auto& c = sites[k];
    if (!profiled) {
      c.unmeasured = "no profiler trace joined: the time between regions is not in the log";
      continue;
    }
    if (steps.empty()) {
      c.unmeasured = "the profiler trace has no ProfilerStep markers: no per-step time";
      continue;
    }
    double gap_ns = 0, device_ns = 0;
    int gaps = 0;
    for (const auto* st : steps) {
      const int64_t from = st->start_ns, to = end_of(*st);
      for (const auto& [lane, spans] : regions)
        for (size_t i = 0; i < spans.size(); ++i) {
          const auto* r = spans[i];
          if (r->start_ns < from || end_of(*r) > to || !ended[k].count(r->compile_id)) continue;
          int64_t g0 = end_of(*r), g1 = to;
          for (size_t j = i + 1; j < spans.size(); ++j)
            if (spans[j]->start_ns >= g0) {
              g1 = std::min(to, spans[j]->start_ns);
              break;
            }
          ++gaps;
          gap_ns += static_cast<double>(g1 - g0);
          for (const auto* l : launches)
            if (l->lane == lane && l->start_ns >= g0 && l->start_ns < g1) device_ns += device_ns_of[l->correlation];
        }
    }
    if (gaps == 0) {
      std::string ids;
      for (const auto& id : ended[k]) ids += (ids.empty() ? "" : ", ") + id;
      c.unmeasured = "no Torch-Compiled Region span of " + (ids.empty() ? std::string("its compile") : ids) +
                     " inside a profiler step";
      continue;
    }
    const double n = static_cast<double>(steps.size());
    c.iterations = static_cast<int>(steps.size());
    c.gaps = static_cast<int>((gaps + steps.size() - 1) / steps.size());
    c.gap_ms = gap_ns / n / 1e6;
    c.device_ms = device_ns / n / 1e6;
    c.total_ms = c.gap_ms;
    c.step_ms = step_ns / n / 1e6;
    c.share = c.step_ms > 0 ? c.total_ms / c.step_ms : 0;
  }
  // Measured sites first, by their gap; then by compile time.
  std::stable_sort(sites.begin(), sites.end(), [](const auto& a, const auto& b) {
    if (a.unmeasured.empty() != b.unmeasured.empty()) return a.unmeasured.empty();
    if (a.total_ms != b.total_ms) return a.total_ms > b.total_ms;
    return a.compile_ms > b.compile_ms;
  });
  return sites;
}

}  // namespace kiln::importers
