// Device time per kernel; see gpu_kernel_stats.h.
#include "engine/report/gpu_kernel_stats.h"

#include <algorithm>
#include <functional>
#include <map>
#include <queue>
#include <set>
#include <sstream>
#include <tuple>

#include <nlohmann/json.hpp>

#include "engine/base/error.h"
#include "engine/base/json_text.h"
#include "engine/report/markdown_text.h"
#include "engine/report/name_table.h"
#include "engine/report/number_text.h"

namespace kiln::report {

namespace {

bool device_lane(const std::string& lane) { return lane.rfind("cuda:", 0) == 0 || lane.rfind("gpu", 0) == 0; }

// Host spans that can have launched a device kernel, innermost first.
bool launcher_span(const session::TimelineEvent& e) {
  return e.dur_ns > 0 && !device_lane(e.lane) && (e.category == "kernel" || e.category == "extern" || e.category == "cpu_op");
}

std::string run_label(const session::Session& s, int run) {
  for (const auto& r : s.runs)
    if (r.id == run) return r.mode + " / " + r.backend;
  return run < 0 ? "imported trace" : "run " + std::to_string(run);
}

// Long C++ kernel names (cuBLAS, cuDNN templates) cut for a table cell; JSON keeps them whole.
std::string short_name(const std::string& name) {
  std::string n = name.rfind("void ", 0) == 0 ? name.substr(5) : name;
  if (n.size() <= 90) return n;
  size_t cut = n.find_first_of("<(");
  if (cut != std::string::npos && cut > 0 && cut <= 80) return n.substr(0, cut) + (n[cut] == '<' ? "<…>" : "(…)");
  return n.substr(0, 80) + "…";
}

std::string us(int64_t ns) { return fixed(static_cast<double>(ns) / 1e3, 2); }
std::string ms(double ns) { return fixed(ns / 1e6, 3); }

}  // namespace

int find_run(const session::Session& s, const std::string& which) {
  session::SessionInMemory rows(s);
  return find_run(rows, which);
}

int find_run(session::SessionRows& rows, const std::string& which) {
  const session::Session& s = rows.summary();
  if (s.runs.empty()) {
    if (rows.has_events(-1)) return -1;
    throw Error("this session has no runs and no timeline events");
  }
  for (const auto& r : s.runs)
    if (r.mode == which || r.mode + "/" + r.backend == which) return r.id;
  for (const auto& r : s.runs)
    if (r.backend == which) return r.id;
  std::vector<std::string> labels;
  for (const auto& r : s.runs) {
    std::string label = r.backend.empty() || r.backend == "kiln" || r.backend == "eager" ? r.mode : r.mode + "/" + r.backend;
    if (std::find(labels.begin(), labels.end(), label) == labels.end()) labels.push_back(label);
  }
  // One line a reader can take in: a few runs, each name cut short (a session may hold thousands of
  // profiler steps, or a run named by a megabyte of text).
  constexpr size_t kShown = 8, kLabelChars = 60;
  std::string list;
  for (size_t i = 0; i < labels.size() && i < kShown; ++i)
    list += (list.empty() ? "" : ", ") + (labels[i].size() <= kLabelChars ? labels[i] : labels[i].substr(0, kLabelChars) + "…");
  if (labels.size() > kShown) list += " and " + std::to_string(labels.size() - kShown) + " more";
  throw Error("no run '" + which + "' (this session has: " + list + "; name a mode, MODE/BACKEND or a backend)");
}

namespace {

enum class SpanKind : uint8_t { kernel, extern_call, cpu_op };

// A host span that can have launched a device kernel, and a device kernel record: the numbers and
// names (by number) the analysis reads.
struct Span {
  int64_t start = 0, dur = 0;
  uint32_t name = 0, kernel = 0, compile_id = 0;
  SpanKind kind = SpanKind::kernel;
};
struct DeviceRecord {
  int64_t dur = 0, correlation = -1;
  uint32_t name = 0, kernel = 0, compile_id = 0;
};

// For each query (time, record) in time order, the innermost span containing the time, as a position
// in `sorted` (spans by start): a sweep over the spans in start order, with the open ones kept by
// duration and retired by end.
std::vector<int> innermost_spans(const std::vector<Span>& spans, const std::vector<uint32_t>& sorted,
                                 const std::vector<std::pair<int64_t, size_t>>& queries) {
  std::vector<int> out(queries.size(), -1);
  std::multiset<std::pair<int64_t, int>> open;  // (duration, position)
  using End = std::pair<int64_t, std::multiset<std::pair<int64_t, int>>::iterator>;
  auto later = [](const End& a, const End& b) { return a.first > b.first; };
  std::priority_queue<End, std::vector<End>, decltype(later)> ends(later);
  size_t next = 0;
  for (size_t q = 0; q < queries.size(); ++q) {
    const int64_t t = queries[q].first;
    while (next < sorted.size() && spans[sorted[next]].start <= t) {
      const Span& s = spans[sorted[next]];
      auto it = open.insert({s.dur, static_cast<int>(next)});
      ends.push({s.start + s.dur, it});
      ++next;
    }
    while (!ends.empty() && ends.top().first < t) {
      open.erase(ends.top().second);
      ends.pop();
    }
    if (!open.empty()) out[q] = open.begin()->second;
  }
  return out;
}

// One record with what launched it, as kernel_records states it.
struct ResolvedRecord {
  const std::string* name = nullptr;
  int64_t dur = 0;
  std::string launched_by, launcher, compile_id;
  const session::TimelineEvent* event = nullptr;  // keep_events only
  const session::TimelineEvent* span = nullptr;   // keep_events only
};

// kernel_records' analysis of one run, fed its events one at a time in timeline order. Each device
// record and launcher span is kept as a few numbers, names by number (NameTable), so that a run read
// row by row from a file takes memory for those and not for its events. With keep_events the
// events' addresses are kept too: then every event given must outlive this object.
class RunRecords {
 public:
  RunRecords(const session::Session& summary, std::set<std::string> kiln_kernels, int run, bool keep_events)
      : kiln_kernels_(std::move(kiln_kernels)), keep_(keep_events) {
    from_kiln_ = summary.origin.rfind("kiln profile", 0) == 0;
    // Kernels replayed from a CUDA graph were launched by one graph launch, not one API call each
    // (Kiln's reduce-overhead and max-autotune, the cudagraphs peer).
    for (const auto& r : summary.runs)
      if (r.id == run)
        graph_replay_ = r.mode == "reduce-overhead" || r.backend == "cudagraphs" ||
                        (r.mode == "max-autotune" && r.backend == "kiln");
  }

  void add(const session::TimelineEvent& e) {
    if (e.category == "iteration") ++iterations_;
    const bool device = device_lane(e.lane);
    if (e.category == "step" && !device) ++steps_;  // not the GPU lane's mirror of the step
    if (e.category == "region" && !device) region_calls_ = std::max(region_calls_, ++calls_of_[e.name]);
    if (device) {
      if (e.category == "kernel" && e.dur_ns >= 0) {
        device_.push_back({e.dur_ns, e.correlation, names_.id(e.name), names_.id(e.kernel), names_.id(e.compile_id)});
        if (keep_) device_events_.push_back(&e);
      }
      return;
    }
    if (e.correlation >= 0) api_time_.push_back({e.correlation, e.start_ns});
    if (launcher_span(e)) {
      const SpanKind kind = e.category == "kernel" ? SpanKind::kernel
                            : e.category == "extern" ? SpanKind::extern_call
                                                     : SpanKind::cpu_op;
      spans_.push_back({e.start_ns, e.dur_ns, names_.id(e.name), names_.id(e.kernel), names_.id(e.compile_id), kind});
      if (keep_) span_events_.push_back(&e);
    }
    // nvtx ranges mirror Kiln's own spans; iterations, steps, regions and the kernel detail iterations (a
    // CUDA-graph window recorded whole: as many as its iterations, their kernels the run's only kernel
    // records) hold everything else.
    if (e.dur_ns > 0 && e.category != "iteration" && e.category != "step" && e.category != "region" &&
        e.category != "nvtx" && e.category != "detail") {
      auto& h = host_[e.category];
      h.category = e.category;
      ++h.calls;
      h.total_ns += e.dur_ns;
    }
  }

  // Iterations: Kiln's traced iterations, else profiler steps, else the calls of the most called
  // compiled region (an imported trace of a few torch.compile calls).
  int iterations() const { return std::max(1, iterations_ > 0 ? iterations_ : steps_ > 0 ? steps_ : region_calls_); }
  std::string time_source() const { return device_.empty() ? "host" : "device"; }
  std::vector<HostCost> host() const {
    std::vector<HostCost> out;
    for (const auto& [_, h] : host_) out.push_back(h);
    std::sort(out.begin(), out.end(), [](const HostCost& a, const HostCost& b) {
      return std::tie(b.total_ns, a.category) < std::tie(a.total_ns, b.category);
    });
    return out;
  }

  // Every record in timeline order with what launched it.
  void each(const std::function<void(const ResolvedRecord&)>& fn) {
    // The CPU: Kiln's kernels and extern calls run on the host; their spans are the kernel time.
    if (device_.empty()) {
      for (size_t i = 0; i < spans_.size(); ++i) {
        const Span& s = spans_[i];
        if (!((s.kind == SpanKind::kernel && !names_[s.kernel].empty()) || s.kind == SpanKind::extern_call)) continue;
        ResolvedRecord rec;
        rec.name = &names_[s.name];
        rec.dur = s.dur;
        rec.compile_id = names_[s.compile_id];
        rec.launched_by = s.kind == SpanKind::extern_call ? names_[s.name] : names_[s.kernel];
        rec.launcher = s.kind == SpanKind::extern_call ? "extern" : "kiln kernel";
        if (keep_) rec.event = rec.span = span_events_[i];
        fn(rec);
      }
      return;
    }
    // Launchers found through the launch API call's correlation id, for records that name none.
    std::vector<uint32_t> sorted(spans_.size());
    for (size_t i = 0; i < sorted.size(); ++i) sorted[i] = static_cast<uint32_t>(i);
    std::sort(sorted.begin(), sorted.end(), [&](uint32_t a, uint32_t b) { return spans_[a].start < spans_[b].start; });
    std::stable_sort(api_time_.begin(), api_time_.end(),  // the first host event of a correlation id counts
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<std::pair<int64_t, size_t>> queries;
    for (size_t i = 0; i < device_.size(); ++i) {
      const int64_t c = device_[i].correlation;
      if (c < 0) continue;
      auto it = std::lower_bound(api_time_.begin(), api_time_.end(), c,
                                 [](const std::pair<int64_t, int64_t>& a, int64_t v) { return a.first < v; });
      if (it != api_time_.end() && it->first == c) queries.push_back({it->second, i});
    }
    std::sort(queries.begin(), queries.end());
    std::vector<int> launcher_of(device_.size(), -1);  // span index
    std::vector<int> found = innermost_spans(spans_, sorted, queries);
    for (size_t q = 0; q < queries.size(); ++q)
      if (found[q] >= 0) launcher_of[queries[q].second] = static_cast<int>(sorted[static_cast<size_t>(found[q])]);
    // The Kiln kernel or extern call around the launch (the LibTorch op inside an extern call is the
    // innermost span, but the call is what maps to a graph node): only the span a record points to.
    std::vector<int> kiln_span_of(device_.size(), -1);
    if (keep_) {
      std::vector<uint32_t> kiln_spans;
      for (uint32_t i : sorted)
        if (spans_[i].kind != SpanKind::cpu_op) kiln_spans.push_back(i);
      std::vector<int> found_kiln = innermost_spans(spans_, kiln_spans, queries);
      for (size_t q = 0; q < queries.size(); ++q)
        if (found_kiln[q] >= 0) kiln_span_of[queries[q].second] = static_cast<int>(kiln_spans[static_cast<size_t>(found_kiln[q])]);
    }
    auto span_event = [&](int kiln, int launcher) -> const session::TimelineEvent* {
      if (!keep_) return nullptr;
      if (kiln >= 0) return span_events_[static_cast<size_t>(kiln)];
      return launcher >= 0 ? span_events_[static_cast<size_t>(launcher)] : nullptr;
    };
    for (size_t i = 0; i < device_.size(); ++i) {
      const DeviceRecord& e = device_[i];
      ResolvedRecord rec;
      rec.name = &names_[e.name];
      rec.dur = e.dur;
      rec.compile_id = names_[e.compile_id];
      if (keep_) rec.event = device_events_[i];
      const std::string& kernel = names_[e.kernel];
      if (!kernel.empty()) {
        rec.launched_by = kernel;
        rec.launcher = kiln_kernels_.count(kernel) ? (from_kiln_ ? "kiln kernel" : "compiled kernel")
                       : kernel.rfind("aten::", 0) == 0 ? "extern"
                                                        : "op";
        rec.span = span_event(kiln_span_of[i], launcher_of[i]);
      } else if (launcher_of[i] >= 0) {
        const Span& l = spans_[static_cast<size_t>(launcher_of[i])];
        rec.span = span_event(kiln_span_of[i], launcher_of[i]);
        rec.launched_by = names_[l.kernel].empty() ? names_[l.name] : names_[l.kernel];
        rec.launcher = l.kind == SpanKind::kernel ? (from_kiln_ ? "kiln kernel" : "compiled kernel")
                       : l.kind == SpanKind::extern_call ? "extern"
                                                         : "op";
        if (rec.compile_id.empty()) rec.compile_id = names_[l.compile_id];
      } else if (graph_replay_) {
        rec.launcher = "CUDA graph replay";
      }
      fn(rec);
    }
  }

 private:
  std::set<std::string> kiln_kernels_;
  bool keep_ = false, from_kiln_ = false, graph_replay_ = false;
  NameTable names_;
  int iterations_ = 0, steps_ = 0, region_calls_ = 0;
  std::map<std::string, int> calls_of_;  // compiled region name → calls
  std::map<std::string, HostCost> host_;
  std::vector<DeviceRecord> device_;
  std::vector<Span> spans_;                                 // in timeline order
  std::vector<std::pair<int64_t, int64_t>> api_time_;       // (correlation id, start of the host event)
  std::vector<const session::TimelineEvent*> device_events_, span_events_;  // keep_events
};

std::set<std::string> kernel_names(session::SessionRows& rows) {
  std::set<std::string> out;
  rows.each_kernel([&](const session::Kernel& k) { out.insert(k.name); });
  return out;
}

}  // namespace

KernelRecords kernel_records(const session::Session& s, int run) {
  std::set<std::string> kiln_kernels;
  for (const auto& k : s.kernels) kiln_kernels.insert(k.name);
  RunRecords gathered(s, std::move(kiln_kernels), run, true);  // s.timeline stays: its addresses are kept
  for (const auto& e : s.timeline)
    if (e.run == run) gathered.add(e);
  KernelRecords out;
  out.run = run;
  out.time_source = gathered.time_source();
  out.iterations = gathered.iterations();
  out.host = gathered.host();
  gathered.each([&](const ResolvedRecord& r) {
    out.records.push_back(KernelRecord{r.event, r.span, r.launched_by, r.launcher, r.compile_id});
  });
  return out;
}

KernelStats kernel_stats(const session::Session& s, int run) {
  session::SessionInMemory rows(s);
  return kernel_stats(rows, run);
}

KernelStats kernel_stats(session::SessionRows& rows, int run) {
  RunRecords gathered(rows.summary(), kernel_names(rows), run, false);
  rows.each_event(run, false, [&](const session::TimelineEvent& e) { gathered.add(e); });
  KernelStats out;
  out.run = run;
  out.time_source = gathered.time_source();
  out.iterations = gathered.iterations();
  out.host = gathered.host();
  std::map<std::tuple<std::string, std::string, std::string>, KernelStat> rows_of;
  gathered.each([&](const ResolvedRecord& rec) {
    const int64_t dur = rec.dur;
    auto& r = rows_of[{*rec.name, rec.launched_by, rec.compile_id}];
    if (r.launches == 0) {
      r.name = *rec.name;
      r.launched_by = rec.launched_by;
      r.launcher = rec.launcher;
      r.compile_id = rec.compile_id;
      r.min_ns = dur;
      r.max_ns = dur;
    }
    ++r.launches;
    r.total_ns += dur;
    r.min_ns = std::min(r.min_ns, dur);
    r.max_ns = std::max(r.max_ns, dur);
    out.total_ns += dur;
    ++out.records;
  });
  for (auto& [_, r] : rows_of) {
    r.mean_ns = static_cast<double>(r.total_ns) / static_cast<double>(r.launches);
    r.launches_per_iter = static_cast<double>(r.launches) / out.iterations;
    r.share = out.total_ns > 0 ? static_cast<double>(r.total_ns) / static_cast<double>(out.total_ns) : 0;
    out.kernels.push_back(std::move(r));
  }
  std::sort(out.kernels.begin(), out.kernels.end(), [](const KernelStat& a, const KernelStat& b) {
    return std::tie(b.total_ns, a.name, a.launched_by) < std::tie(a.total_ns, b.name, b.launched_by);
  });
  return out;
}

LauncherTime launcher_time(const KernelStats& stats, const session::Kernel& k) {
  LauncherTime t;
  double launches = 0;
  for (const auto& r : stats.kernels)
    if (r.launched_by == k.name && (r.compile_id.empty() || k.compile_id.empty() || r.compile_id == k.compile_id)) {
      t.total_ns += r.total_ns;
      launches += r.launches_per_iter;
      t.share += r.share;
    }
  t.launches_per_iter = launches;
  return t;
}

std::string render_kernel_stats_markdown(const session::Session& s, const KernelStats& st, size_t limit, int level) {
  using markdown::code;
  using markdown::md;
  std::ostringstream os;
  const bool dev = st.time_source == "device";
  const std::string h(static_cast<size_t>(std::max(1, level)), '#');
  os << h << " " << (dev ? "GPU" : "CPU") << " time per kernel: " << md(run_label(s, st.run)) << "\n\n";
  if (st.records == 0) {
    os << "No kernel time recorded for this run" << (dev ? "" : " (no device records and no host spans of kernels)")
       << ".\n";
  } else {
    const double per_iter = static_cast<double>(st.total_ns) / st.iterations;
    int64_t launches = 0;
    for (const auto& r : st.kernels) launches += r.launches;
    os << (dev ? "Device" : "Host") << " time in kernels: **" << ms(per_iter) << " ms per iteration** ("
       << fixed(static_cast<double>(launches) / st.iterations, 1) << " launches per iteration, " << st.iterations
       << " traced iteration" << (st.iterations == 1 ? "" : "s") << ", " << grouped(st.records) << " "
       << (dev ? "device records" : "host spans: no device records") << ").\n\n";
    os << "| # | kernel | launched by | launches/iter | total ms/iter | mean µs | min µs | max µs | share |\n"
       << "|--:|---|---|--:|--:|--:|--:|--:|--:|\n";
    const size_t shown = limit == 0 ? st.kernels.size() : std::min(limit, st.kernels.size());
    for (size_t i = 0; i < shown; ++i) {
      const auto& r = st.kernels[i];
      std::string by = r.launched_by.empty() ? (r.launcher.empty() ? "-" : r.launcher)
                                             : code(r.launched_by.size() > 120 ? r.launched_by.substr(0, 117) + "..." : r.launched_by) +
                                                   (r.launcher.empty() ? "" : " (" + r.launcher + ")");
      os << "| " << i + 1 << " | " << code(short_name(r.name)) << " | " << by << " | " << fixed(r.launches_per_iter, 1)
         << " | " << ms(static_cast<double>(r.total_ns) / st.iterations) << " | " << us(static_cast<int64_t>(r.mean_ns))
         << " | " << us(r.min_ns) << " | " << us(r.max_ns) << " | " << percent(r.share) << " |\n";
    }
    if (shown < st.kernels.size()) {
      int64_t rest = 0, n = 0;
      double share = 0;
      for (size_t i = shown; i < st.kernels.size(); ++i) {
        rest += st.kernels[i].total_ns;
        n += st.kernels[i].launches;
        share += st.kernels[i].share;
      }
      os << "| | " << st.kernels.size() - shown << " more kernels | | " << fixed(static_cast<double>(n) / st.iterations, 1)
         << " | " << ms(static_cast<double>(rest) / st.iterations) << " | | | | " << percent(share) << " |\n";
    }
  }
  if (!st.host.empty()) {
    os << "\n" << h << "# Host cost\n\nHost spans by kind, per iteration (spans nest: an extern call's span holds the launch API "
          "calls it makes, so the rows do not add up).\n\n| host span | calls/iter | ms/iter |\n|---|--:|--:|\n";
    for (const auto& h : st.host)
      os << "| " << md(h.category) << " | " << fixed(static_cast<double>(h.calls) / st.iterations, 1) << " | "
         << ms(static_cast<double>(h.total_ns) / st.iterations) << " |\n";
  }
  return os.str();
}

std::string render_kernel_stats_json(const session::Session& s, const KernelStats& st) {
  nlohmann::ordered_json j;
  j["run"] = st.run;
  j["label"] = run_label(s, st.run);
  j["time_source"] = st.time_source;
  j["iterations"] = st.iterations;
  j["total_ns"] = st.total_ns;
  j["records"] = st.records;
  j["kernels"] = nlohmann::ordered_json::array();
  for (const auto& r : st.kernels)
    j["kernels"].push_back({{"name", r.name},
                            {"launched_by", r.launched_by},
                            {"launcher", r.launcher},
                            {"compile_id", r.compile_id},
                            {"launches", r.launches},
                            {"launches_per_iter", r.launches_per_iter},
                            {"total_ns", r.total_ns},
                            {"mean_ns", r.mean_ns},
                            {"min_ns", r.min_ns},
                            {"max_ns", r.max_ns},
                            {"share", r.share}});
  j["host"] = nlohmann::ordered_json::array();
  for (const auto& h : st.host) j["host"].push_back({{"category", h.category}, {"calls", h.calls}, {"total_ns", h.total_ns}});
  return safe_dump(j, 1) + "\n";
}

void TimedRuns::add(const session::TimelineEvent& e) {
  if (e.dur_ns > 0 && ((device_lane(e.lane) && e.category == "kernel") || (!e.kernel.empty() && e.category == "kernel")))
    timed_.insert(e.run);
}

int TimedRuns::report_run(const session::Session& s) const {
  const session::Run* best = nullptr;
  for (const auto& r : s.runs)
    if (r.status == "ok" && r.mode != "eager" && timed_.count(r.id) &&
        (!best || r.speedup_vs_eager > best->speedup_vs_eager))
      best = &r;
  if (best) return best->id;
  for (const auto& r : s.runs)
    if (timed_.count(r.id)) return r.id;
  return -1;
}

int report_run(const session::Session& s) {
  session::SessionInMemory rows(s);
  return report_run(rows);
}

int report_run(session::SessionRows& rows) {
  if (rows.summary().runs.empty()) return -1;  // no run to pick: nothing to read
  TimedRuns timed;
  rows.each_event(std::nullopt, false, [&](const session::TimelineEvent& e) { timed.add(e); });
  return timed.report_run(rows.summary());
}

}  // namespace kiln::report
