// Device time per kernel; see gpu_kernel_stats.h.
#include "engine/report/gpu_kernel_stats.h"

#include <algorithm>
#include <map>
#include <queue>
#include <set>
#include <sstream>
#include <tuple>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "engine/base/error.h"
#include "engine/base/json_text.h"
#include "engine/report/markdown_text.h"
#include "engine/report/number_text.h"

namespace kiln::report {

namespace {

bool device_lane(const std::string& lane) { return lane.rfind("cuda:", 0) == 0 || lane.rfind("gpu", 0) == 0; }

// Host spans that can have launched a device kernel, innermost first.
bool launcher_span(const session::TimelineEvent& e) {
  return e.dur_ns > 0 && !device_lane(e.lane) && (e.category == "kernel" || e.category == "extern" || e.category == "cpu_op");
}

// For each query (time, record) in time order, the innermost launcher span containing the time: a sweep over the spans
// in start order, with the open ones kept by duration and retired by end.
std::vector<int> innermost_spans(const std::vector<const session::TimelineEvent*>& spans,
                                 const std::vector<std::pair<int64_t, size_t>>& queries) {
  std::vector<int> out(queries.size(), -1);
  std::multiset<std::pair<int64_t, int>> open;  // (duration, span index)
  using End = std::pair<int64_t, std::multiset<std::pair<int64_t, int>>::iterator>;
  auto later = [](const End& a, const End& b) { return a.first > b.first; };
  std::priority_queue<End, std::vector<End>, decltype(later)> ends(later);
  size_t next = 0;
  for (size_t q = 0; q < queries.size(); ++q) {
    const int64_t t = queries[q].first;
    while (next < spans.size() && spans[next]->start_ns <= t) {
      auto it = open.insert({spans[next]->dur_ns, static_cast<int>(next)});
      ends.push({spans[next]->start_ns + spans[next]->dur_ns, it});
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
  std::string list;
  for (const auto& l : labels) list += (list.empty() ? "" : ", ") + l;
  throw Error("no run '" + which + "' (this session has: " + list + "; name a mode, MODE/BACKEND or a backend)");
}

KernelRecords kernel_records(const session::Session& s, int run) {
  KernelRecords out;
  out.run = run;
  std::set<std::string> kiln_kernels;
  for (const auto& k : s.kernels) kiln_kernels.insert(k.name);
  const bool from_kiln = s.origin.rfind("kiln profile", 0) == 0;

  std::vector<const session::TimelineEvent*> device, spans;
  std::unordered_map<int64_t, int64_t> api_time;  // correlation id → start of the host API call
  int iterations = 0, steps = 0;
  std::map<std::string, HostCost> host;
  for (const auto& e : s.timeline) {
    if (e.run != run) continue;
    if (e.category == "iteration") ++iterations;
    if (e.category == "step" && !device_lane(e.lane)) ++steps;  // not the GPU lane's mirror of the step
    if (device_lane(e.lane)) {
      if (e.category == "kernel" && e.dur_ns >= 0) device.push_back(&e);
      continue;
    }
    if (e.correlation >= 0) api_time.emplace(e.correlation, e.start_ns);
    if (launcher_span(e)) spans.push_back(&e);
    // nvtx ranges mirror Kiln's own spans; iterations, steps and regions hold everything else.
    if (e.dur_ns > 0 && e.category != "iteration" && e.category != "step" && e.category != "region" &&
        e.category != "nvtx") {
      auto& h = host[e.category];
      h.category = e.category;
      ++h.calls;
      h.total_ns += e.dur_ns;
    }
  }
  // Iterations: Kiln's traced iterations, else profiler steps, else the calls of the most called
  // compiled region (an imported trace of a few torch.compile calls).
  int calls = 0;
  if (iterations == 0 && steps == 0) {
    std::map<std::string, int> region_calls;
    for (const auto& e : s.timeline)
      if (e.run == run && e.category == "region" && !device_lane(e.lane)) calls = std::max(calls, ++region_calls[e.name]);
  }
  out.iterations = std::max(1, iterations > 0 ? iterations : steps > 0 ? steps : calls);
  for (auto& [_, h] : host) out.host.push_back(h);
  std::sort(out.host.begin(), out.host.end(), [](const HostCost& a, const HostCost& b) {
    return std::tie(b.total_ns, a.category) < std::tie(a.total_ns, b.category);
  });

  // The CPU: Kiln's kernels and extern calls run on the host; their spans are the kernel time.
  std::vector<const session::TimelineEvent*> records = device;
  out.time_source = "device";
  if (device.empty()) {
    out.time_source = "host";
    for (const auto* e : spans)
      if ((e->category == "kernel" && !e->kernel.empty()) || e->category == "extern") records.push_back(e);
  }

  // Launchers found through the launch API call's correlation id, for records that name none.
  std::sort(spans.begin(), spans.end(), [](const auto* a, const auto* b) { return a->start_ns < b->start_ns; });
  std::vector<std::pair<int64_t, size_t>> queries;
  for (size_t i = 0; i < records.size(); ++i) {
    if (records[i]->correlation < 0) continue;
    auto it = api_time.find(records[i]->correlation);
    if (it != api_time.end()) queries.push_back({it->second, i});
  }
  std::sort(queries.begin(), queries.end());
  std::vector<int> found = innermost_spans(spans, queries);
  std::vector<const session::TimelineEvent*> launcher_of(records.size(), nullptr);
  for (size_t q = 0; q < queries.size(); ++q)
    if (found[q] >= 0) launcher_of[queries[q].second] = spans[static_cast<size_t>(found[q])];
  // The Kiln kernel or extern call around the launch (the LibTorch op inside an extern call is the
  // innermost span, but the call is what maps to a graph node).
  std::vector<const session::TimelineEvent*> kiln_spans;
  for (const auto* e : spans)
    if (e->category == "kernel" || e->category == "extern") kiln_spans.push_back(e);
  std::vector<int> found_kiln = innermost_spans(kiln_spans, queries);
  std::vector<const session::TimelineEvent*> kiln_span_of(records.size(), nullptr);
  for (size_t q = 0; q < queries.size(); ++q)
    if (found_kiln[q] >= 0) kiln_span_of[queries[q].second] = kiln_spans[static_cast<size_t>(found_kiln[q])];

  // Kernels replayed from a CUDA graph were launched by one graph launch, not one API call each
  // (Kiln's reduce-overhead and max-autotune, the cudagraphs peer).
  bool graph_replay = false;
  for (const auto& r : s.runs)
    if (r.id == run)
      graph_replay = r.mode == "reduce-overhead" || r.backend == "cudagraphs" ||
                     (r.mode == "max-autotune" && r.backend == "kiln");
  for (size_t i = 0; i < records.size(); ++i) {
    const auto& e = *records[i];
    KernelRecord rec;
    rec.event = &e;
    rec.compile_id = e.compile_id;
    std::string& by = rec.launched_by;
    std::string& kind = rec.launcher;
    std::string& compile_id = rec.compile_id;
    if (out.time_source == "host") {
      rec.span = &e;
      by = e.category == "extern" ? e.name : e.kernel;
      kind = e.category == "extern" ? "extern" : "kiln kernel";
    } else if (!e.kernel.empty()) {
      by = e.kernel;
      kind = kiln_kernels.count(e.kernel) ? (from_kiln ? "kiln kernel" : "compiled kernel")
             : e.kernel.rfind("aten::", 0) == 0 ? "extern"
                                                : "op";
      rec.span = kiln_span_of[i] ? kiln_span_of[i] : launcher_of[i];
    } else if (const auto* l = launcher_of[i]) {
      rec.span = kiln_span_of[i] ? kiln_span_of[i] : l;
      by = l->kernel.empty() ? l->name : l->kernel;
      kind = l->category == "kernel" ? (from_kiln ? "kiln kernel" : "compiled kernel")
             : l->category == "extern" ? "extern"
                                       : "op";
      if (compile_id.empty()) compile_id = l->compile_id;
    } else if (graph_replay) {
      kind = "CUDA graph replay";
    }
    out.records.push_back(std::move(rec));
  }
  return out;
}

KernelStats kernel_stats(const session::Session& s, int run) {
  KernelRecords recs = kernel_records(s, run);
  KernelStats out;
  out.run = run;
  out.time_source = recs.time_source;
  out.iterations = recs.iterations;
  out.host = std::move(recs.host);
  std::map<std::tuple<std::string, std::string, std::string>, KernelStat> rows;
  for (const auto& rec : recs.records) {
    const auto& e = *rec.event;
    auto& r = rows[{e.name, rec.launched_by, rec.compile_id}];
    if (r.launches == 0) {
      r.name = e.name;
      r.launched_by = rec.launched_by;
      r.launcher = rec.launcher;
      r.compile_id = rec.compile_id;
      r.min_ns = e.dur_ns;
      r.max_ns = e.dur_ns;
    }
    ++r.launches;
    r.total_ns += e.dur_ns;
    r.min_ns = std::min(r.min_ns, e.dur_ns);
    r.max_ns = std::max(r.max_ns, e.dur_ns);
    out.total_ns += e.dur_ns;
    ++out.records;
  }
  for (auto& [_, r] : rows) {
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

int report_run(const session::Session& s) {
  std::set<int> timed;
  for (const auto& e : s.timeline)
    if (e.dur_ns > 0 && ((device_lane(e.lane) && e.category == "kernel") || (!e.kernel.empty() && e.category == "kernel")))
      timed.insert(e.run);
  const session::Run* best = nullptr;
  for (const auto& r : s.runs)
    if (r.status == "ok" && r.mode != "eager" && timed.count(r.id) &&
        (!best || r.speedup_vs_eager > best->speedup_vs_eager))
      best = &r;
  if (best) return best->id;
  for (const auto& r : s.runs)
    if (timed.count(r.id)) return r.id;
  return -1;
}

}  // namespace kiln::report
