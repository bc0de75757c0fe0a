// Break costs from a run's host timeline; see break_costs.h.
#include "engine/report/break_costs.h"

#include <algorithm>
#include <map>
#include <set>

#include "engine/report/number_text.h"

namespace kiln::report {

namespace {

using session::TimelineEvent;

std::string site_key(const std::string& id, const std::string& reason, const std::string& file, int line) {
  return id + "\n" + reason + "\n" + file + ":" + std::to_string(line);
}

std::string site_key(const session::GraphBreakRecord& r) { return session::break_site_key(r); }

int region_of(const TimelineEvent& e) {
  static const std::string prefix = "region ";
  if (e.name.rfind(prefix, 0) != 0) return -1;
  try {
    return std::stoi(e.name.substr(prefix.size()));
  } catch (const std::exception&) {
    return -1;
  }
}

int64_t end_of(const TimelineEvent& e) { return e.start_ns + e.dur_ns; }

bool inside(const TimelineEvent& e, int64_t from, int64_t to) { return e.start_ns >= from && end_of(e) <= to; }

// One region span of an iteration, with what ran inside it.
struct RegionSpan {
  int region = -1;
  int64_t start = 0, end = 0;
  double guard_ns = 0;
};

// The sites (indices into `sites`) that stand in the gap between region a and region b.
std::vector<size_t> standing_in(const std::vector<const session::GraphBreakRecord*>& records,
                                const std::map<std::string, size_t>& index, int a, int b) {
  auto match = [&](auto&& pred) {
    std::set<size_t> out;
    for (const auto* r : records)
      if (pred(r->info)) out.insert(index.at(site_key(*r)));
    return std::vector<size_t>(out.begin(), out.end());
  };
  auto exact = match([&](const capture::GraphBreak& g) { return g.ends_region == a && g.resumes_region == b; });
  if (!exact.empty()) return exact;
  if (a >= 0) {
    auto ends = match([&](const capture::GraphBreak& g) { return g.ends_region == a; });
    if (!ends.empty()) return ends;
  }
  if (b >= 0) return match([&](const capture::GraphBreak& g) { return g.resumes_region == b; });
  return {};
}

// Measured costs first, most costly first; then by compile time (imported sites).
bool costlier(const session::BreakCost& a, const session::BreakCost& b) {
  if (a.unmeasured.empty() != b.unmeasured.empty()) return a.unmeasured.empty();
  if (a.total_ms != b.total_ms) return a.total_ms > b.total_ms;
  return a.compile_ms > b.compile_ms;
}

}  // namespace

std::vector<session::BreakCost> measure_break_costs(const std::vector<session::GraphBreakRecord>& breaks,
                                                    const std::vector<session::TimelineEvent>& timeline, int run) {
  if (breaks.empty()) return {};
  std::vector<session::BreakCost> sites;
  std::map<std::string, size_t> index;
  std::vector<const session::GraphBreakRecord*> records;
  for (const auto& r : breaks) {
    records.push_back(&r);
    auto [it, fresh] = index.emplace(site_key(r), sites.size());
    if (!fresh) continue;
    sites.push_back(session::break_cost_site(r, run));
  }

  // The run's host spans by lane, in time order.
  std::map<std::string, std::vector<const TimelineEvent*>> lanes;
  for (const auto& e : timeline)
    if (e.run == run && e.lane.rfind("host:", 0) == 0) lanes[e.lane].push_back(&e);
  int iterations = 0;
  double step_ns = 0;
  std::vector<double> gap_ns(sites.size()), interp_ns(sites.size()), guard_ns(sites.size());
  std::vector<int> gaps(sites.size()), shared(sites.size());
  for (auto& [lane, spans] : lanes) {
    std::stable_sort(spans.begin(), spans.end(), [](const auto* a, const auto* b) { return a->start_ns < b->start_ns; });
    for (const auto* it : spans) {
      if (it->category != "iteration") continue;
      ++iterations;
      step_ns += static_cast<double>(it->dur_ns);
      const int64_t from = it->start_ns, to = end_of(*it);
      std::vector<RegionSpan> regions;
      std::vector<const TimelineEvent*> interpreter;
      for (const auto* e : spans) {
        if (!inside(*e, from, to)) continue;
        if (e->category == "region") regions.push_back({region_of(*e), e->start_ns, end_of(*e)});
        if (e->category == "interpreter") interpreter.push_back(e);
      }
      for (auto& r : regions)
        for (const auto* e : spans)
          if (inside(*e, r.start, r.end) && e->category == "guard") r.guard_ns += static_cast<double>(e->dur_ns);
      // Gaps: iteration start → first region → ... → last region → iteration end.
      for (size_t i = 0; i <= regions.size(); ++i) {
        const RegionSpan* before = i > 0 ? &regions[i - 1] : nullptr;
        const RegionSpan* after = i < regions.size() ? &regions[i] : nullptr;
        const int a = before ? before->region : -1, b = after ? after->region : -1;
        auto in = standing_in(records, index, a, b);
        if (in.empty()) continue;
        const int64_t g0 = before ? before->end : from, g1 = after ? after->start : to;
        double interp = 0;
        for (const auto* e : interpreter)
          if (inside(*e, g0, g1)) interp += static_cast<double>(e->dur_ns);
        const double n = static_cast<double>(in.size());
        for (size_t k : in) {
          gap_ns[k] += static_cast<double>(g1 - g0) / n;
          interp_ns[k] += interp / n;
          guard_ns[k] += (after ? after->guard_ns : 0) / n;
          ++gaps[k];
          if (in.size() > 1) ++shared[k];
        }
      }
    }
  }
  if (iterations == 0) return {};
  std::vector<session::BreakCost> out;
  const double per = 1e6 * iterations;
  for (size_t k = 0; k < sites.size(); ++k) {
    if (gaps[k] == 0) continue;
    auto c = sites[k];
    c.iterations = iterations;
    c.gaps = (gaps[k] + iterations - 1) / iterations;
    c.shared_gaps = (shared[k] + iterations - 1) / iterations;
    c.gap_ms = gap_ns[k] / per;
    c.interpreter_ms = interp_ns[k] / per;
    c.guard_ms = guard_ns[k] / per;
    c.total_ms = c.gap_ms + c.guard_ms;
    c.step_ms = step_ns / per;
    c.share = c.step_ms > 0 ? c.total_ms / c.step_ms : 0;
    out.push_back(std::move(c));
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.total_ms > b.total_ms; });
  return out;
}

std::vector<session::BreakCost> break_costs_of(const session::Session& s, int run) {
  std::vector<session::BreakCost> out;
  for (const auto& c : s.break_costs)
    if (c.run == run) out.push_back(c);
  std::stable_sort(out.begin(), out.end(), costlier);
  return out;
}

int shown_break_cost_run(const session::Session& s) {
  std::set<int> with_costs;
  for (const auto& c : s.break_costs) with_costs.insert(c.run);
  for (const auto& r : s.runs)
    if (r.mode == "default" && r.backend == "kiln" && with_costs.count(r.id)) return r.id;
  for (const auto& r : s.runs)
    if (with_costs.count(r.id)) return r.id;
  return with_costs.empty() ? -1 : *with_costs.begin();
}

const session::BreakCost* cost_of(const std::vector<session::BreakCost>& costs, const session::GraphBreakRecord& record) {
  const std::string key = site_key(record);
  for (const auto& c : costs)
    if (site_key(c.break_id, c.reason, c.file, c.line) == key) return &c;
  return nullptr;
}

std::vector<BreakGroup> ranked_break_groups(const session::Session& s) {
  auto groups = group_breaks(s.breaks);
  const auto costs = break_costs_of(s, shown_break_cost_run(s));
  auto cost = [&](const BreakGroup& g) { return g.first ? cost_of(costs, *g.first) : nullptr; };
  std::stable_sort(groups.begin(), groups.end(), [&](const auto& a, const auto& b) {
    const auto *ca = cost(a), *cb = cost(b);
    if (!ca || !cb) return ca && !cb;
    return costlier(*ca, *cb);
  });
  return groups;
}

std::string break_cost_text(const session::BreakCost& c) {
  std::string compile =
      c.compiles > 0 ? "compile " + fixed(c.compile_ms, 1) + " ms in " + std::to_string(c.compiles) + " compile(s)" : "";
  if (!c.unmeasured.empty()) return "not measured (" + c.unmeasured + ")" + (compile.empty() ? "" : "; " + compile);
  std::string text = fixed(c.total_ms, 3) + " ms (" + percent(c.share) + " of the step)";
  if (c.device_ms > 0) text += ", device " + fixed(c.device_ms, 3) + " ms";
  return compile.empty() ? text : text + "; " + compile;
}

std::string lost_fusion_text(const session::BreakCost& c) {
  if (!c.lost_fusion_checked) return "not checked";
  if (!c.lost_fusion_unmeasured.empty()) return "not measured (" + c.lost_fusion_unmeasured + ")";
  if (c.lost_fusion.empty()) return "none (no kernel fuses across the break)";
  return fixed(c.lost_fusion_ms, 3) + " ms (" + c.lost_fusion + ")";
}

}  // namespace kiln::report
