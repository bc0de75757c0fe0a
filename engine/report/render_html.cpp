#include "engine/report/render_html.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

#include "engine/report/break_costs.h"
#include "engine/report/break_groups.h"
#include "engine/report/compile_table.h"
#include "engine/report/graphviz_svg.h"
#include "engine/report/gpu_kernel_stats.h"
#include "engine/report/observations.h"
#include "engine/report/html_text.h"
#include "engine/report/memory_view.h"
#include "engine/report/number_text.h"
#include "engine/report/recompile_costs.h"
#include "engine/report/recompile_history.h"
#include "engine/report/report_timeline.h"
#include "engine/report/svg_speedup_chart.h"
#include "engine/report/svg_timeline.h"

namespace kiln::report {

namespace {

const char* kStyle = R"CSS(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1f2937;background:#f8fafc}
header{background:#111827;color:#f9fafb;padding:18px 28px}header h1{margin:0;font-size:20px}
header p{margin:4px 0 0;color:#cbd5e1}main{padding:8px 28px 40px;max-width:1400px}
section{background:#fff;border:1px solid #e5e7eb;border-radius:8px;padding:14px 18px;margin:16px 0}
h2{font-size:16px;margin:0 0 10px}table{border-collapse:collapse;width:100%;font-size:13px}
th,td{text-align:left;padding:5px 8px;border-bottom:1px solid #eef2f7;vertical-align:top}
th{background:#f1f5f9;font-weight:600}td.num{text-align:right;font-variant-numeric:tabular-nums}
code,pre{font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,monospace}pre{background:#0f172a;color:#e2e8f0;
padding:10px;border-radius:6px;overflow:auto;max-height:420px}.muted{color:#64748b}.bad{color:#b91c1c}
.ok{color:#15803d}.tag{display:inline-block;background:#eef2ff;color:#3730a3;border-radius:4px;padding:0 6px;
font-size:12px;margin-right:6px}details{margin:4px 0}summary{cursor:pointer}.svgbox{overflow:auto}
svg text{font:11px system-ui,sans-serif;fill:#334155}svg .muted{fill:#94a3b8}svg .ref{stroke:#64748b;stroke-dasharray:4 3}
.bar-faster{fill:#16a34a}.bar-slower{fill:#f97316}.lane{fill:#f8fafc;stroke:#e2e8f0}.axis,.tick{stroke:#cbd5e1}
.lane-label{fill:#0f172a;font-weight:600}.span-label{fill:#fff;font-size:10px}.fold{fill:#94a3b8}.instant{fill:#0f172a}.memory{fill:#c4b5fd;stroke:#7c3aed;stroke-width:1}.peak{fill:#dc2626}.mem-peak{fill:#475569;font-size:11px}
.c-region{fill:#93c5fd}.c-kernel{fill:#f59e0b}.c-guard{fill:#a78bfa}.c-interp{fill:#f472b6}.c-compile{fill:#64748b}
.verdict{border-left:4px solid #2563eb}.verdict-line{font-size:15px;margin:0 0 8px}
.c-cpuop{fill:#60a5fa}.c-memcpy{fill:#34d399}.c-other0{fill:#2dd4bf}.c-other1{fill:#fb7185}.c-other2{fill:#a3e635}
)CSS";

std::string esc(const std::string& s) { return html_escape(s); }

std::string sci(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2g", v);
  return buf;
}

void summary(std::ostringstream& os, const session::Session& s) {
  const size_t breaks = s.breaks.size();
  os << "<section><h2>Summary</h2><table>";
  os << "<tr><th>model</th><td><code>" << esc(s.model.path) << "</code></td></tr>";
  if (!s.model.inputs.empty()) {
    std::string in;
    for (const auto& i : s.model.inputs) in += (in.empty() ? "" : ", ") + i;
    os << "<tr><th>inputs</th><td>" << esc(in) << "</td></tr>";
  }
  os << "<tr><th>origin</th><td>" << esc(s.origin) << "</td></tr>";
  os << "<tr><th>compiled regions</th><td>" << s.regions.size() << "</td></tr>";
  os << "<tr><th>graph breaks</th><td>" << breaks << "</td></tr>";
  os << "<tr><th>kernels</th><td>" << s.kernels.size() << "</td></tr>";
  os << "<tr><th>runs</th><td>" << s.runs.size() << "</td></tr>";
  if (s.model.parameter_count) os << "<tr><th>parameters</th><td>" << grouped(s.model.parameter_count) << "</td></tr>";
  os << "</table><h2 style='margin-top:14px'>Environment</h2><table>";
  auto row = [&](const char* k, const std::string& v) {
    if (!v.empty()) os << "<tr><th>" << k << "</th><td>" << esc(v) << "</td></tr>";
  };
  row("Kiln", s.env.kiln_version);
  row("LibTorch / torch", s.env.libtorch_version);
  row("OS", s.env.os);
  row("CPU", s.env.cpu);
  row("GPU", s.env.gpu);
  row("driver", s.env.driver);
  row("CUDA", s.env.cuda);
  row("created", s.env.created_at);
  os << "</table></section>";
}

void runs(std::ostringstream& os, const session::Session& s) {
  if (s.runs.empty()) return;
  os << "<section><h2>Modes and backends (every column)</h2><table><tr><th>mode</th><th>backend</th><th>device</th><th>status</th>"
        "<th>compile cold ms</th><th>compile warm ms</th><th>first call ms</th><th>median ms</th><th>p10</th><th>p90</th>"
        "<th>kernels/iter</th><th>host ms/iter</th><th>speedup</th><th>max rel err</th></tr>";
  for (const auto& r : s.runs) {
    bool ok = r.status == "ok";
    os << "<tr><td>" << esc(r.mode) << "</td><td>" << esc(r.backend) << "</td><td>" << esc(r.device) << "</td><td class='"
       << (ok ? "ok" : "bad") << "'>" << esc(r.status) << "</td><td class=num>" << measured(r.compile_cold_ms, 1, ok, true)
       << "</td><td class=num>" << measured(r.compile_warm_ms, 1, ok, true) << "</td><td class=num>"
       << measured(r.first_call_ms, 3, ok, true) << "</td><td class=num>" << measured(r.latency.median_ms, 4, ok, true)
       << "</td><td class=num>" << measured(r.latency.p10_ms, 4, ok, true) << "</td><td class=num>"
       << measured(r.latency.p90_ms, 4, ok, true) << "</td><td class=num>" << measured(r.kernels_per_iter, 1, ok)
       << "</td><td class=num>" << measured(r.host_overhead_ms, 4, ok, true) << "</td><td class=num>"
       << speedup(r.speedup_vs_eager) << "</td><td class=num>" << (ok ? sci(r.max_rel_error) : "-") << "</td></tr>";
  }
  os << "</table></section>";
}

// An imported torch.compile log as tlparse lays it out (compile_table.h).
void compiles(std::ostringstream& os, const session::Session& s) {
  auto rows = compile_rows(s);
  if (rows.empty()) return;
  auto t = [](double v) { return v < 0 ? std::string("-") : fixed(v, 1); };
  os << "<section><h2>Compiles (" << rows.size() << ")</h2><table><tr><th>compile id</th><th>frame</th><th>total ms</th>"
        "<th>Dynamo ms</th><th>AOT autograd ms</th><th>Inductor ms</th><th>cache</th><th>guards</th><th>graph ops</th></tr>";
  for (const auto& r : rows)
    os << "<tr><td><code>" << esc(r.compile_id) << "</code></td><td>" << esc(r.frame) << "</td><td class=num>"
       << t(r.total_ms) << "</td><td class=num>" << t(r.dynamo_ms) << "</td><td class=num>" << t(r.aot_ms)
       << "</td><td class=num>" << t(r.inductor_ms) << "</td><td>" << esc(r.cache.empty() ? "-" : r.cache)
       << "</td><td class=num>" << (r.guards < 0 ? "-" : std::to_string(r.guards)) << "</td><td class=num>"
       << (r.graph_ops < 0 ? "-" : std::to_string(r.graph_ops)) << "</td></tr>";
  os << "</table>";
  bool failures = false;
  for (const auto& r : rows) failures |= !r.fail_type.empty() || !r.restart_reasons.empty();
  if (failures) {
    os << "<h3>Failures and restarts</h3><table><tr><th>compile id</th><th>fail type</th><th>reason</th><th>restarts</th></tr>";
    for (const auto& r : rows) {
      if (r.fail_type.empty() && r.restart_reasons.empty()) continue;
      os << "<tr><td><code>" << esc(r.compile_id) << "</code></td><td class=bad>" << esc(r.fail_type) << "</td><td>"
         << esc(r.fail_reason) << "</td><td>" << esc(restarts_text(r)) << "</td></tr>";
    }
    os << "</table>";
  }
  auto config = config_differences(s);
  if (!config.keys.empty()) {
    os << "<h3>Configuration that differs from the default or between compiles</h3><p class=muted>" << config.hidden
       << " other keys are at their default or the same in every compile.</p><table><tr><th>config</th><th>key</th>"
          "<th>value</th><th>default</th><th>compiles</th></tr>";
    for (const auto& c : config.keys) {
      std::string ids;
      for (const auto& id : c.compile_ids) ids += (ids.empty() ? "" : " ") + id;
      os << "<tr><td>" << esc(c.config) << "</td><td><code>" << esc(c.key) << "</code></td><td><code>" << esc(c.value)
         << "</code></td><td><code>" << esc(c.default_value.empty() ? "-" : c.default_value) << "</code></td><td>"
         << esc(ids) << "</td></tr>";
    }
    os << "</table>";
  }
  os << "</section>";
}

// The answer first: one line of verdict, what Kiln noticed, and the numbers that say why.
void verdict_first(std::ostringstream& os, const session::Session& s, const RunMemoryPeaks& memory) {
  os << "<section class=verdict><h2>Verdict</h2><p class=verdict-line><b>" << esc(verdict(s)) << "</b></p>";
  auto seen = observations(s, memory);
  if (!seen.empty()) {
    os << "<ul class=observations>";
    for (const auto& o : seen) os << "<li>" << esc(o) << "</li>";
    os << "</ul>";
  }
  if (!s.runs.empty()) {
    os << "<table><tr><th>run</th><th>status</th><th>median ms</th><th>vs eager</th><th>GPU busy</th>"
          "<th>launch gap ms</th><th>kernels/iter</th><th>peak memory</th><th>max rel err</th></tr>";
    for (const auto& r : s.runs) {
      const bool ok = r.status == "ok";
      std::string status = r.status.size() > 100 ? r.status.substr(0, 97) + "..." : r.status;
      os << "<tr><td>" << esc(r.mode)
         << (r.backend.empty() || r.backend == "kiln" || r.backend == "eager" ? "" : " / " + esc(r.backend))
         << "</td><td class='" << (ok ? "ok" : "bad") << "' title=\"" << esc(r.status) << "\">" << esc(status)
         << "</td><td class=num>" << measured(r.latency.median_ms, 3, ok, true) << "</td><td class=num>"
         << (ok && r.speedup_vs_eager > 0 ? speedup(r.speedup_vs_eager) : "-") << "</td><td class=num>"
         << (ok && r.gpu_busy > 0 ? percent(r.gpu_busy) : "-") << "</td><td class=num>"
         << measured(r.launch_gap_ms, 4, ok, true) << "</td><td class=num>" << measured(r.kernels_per_iter, 1, ok)
         << "</td><td class=num>" << (ok && r.peak_memory_bytes > 0 ? bytes(r.peak_memory_bytes) : "-")
         << "</td><td class=num>" << (ok ? sci(r.max_rel_error) : "-") << "</td></tr>";
    }
    os << "</table><div class=svgbox>" << speedup_chart_svg(s.runs) << "</div>";
  }
  os << "</section>";
}

void breaks(std::ostringstream& os, const session::Session& s) {
  os << "<section><h2>Graph breaks</h2>";
  auto groups = ranked_break_groups(s);  // most costly first, where a run measured them
  const auto costs = break_costs_of(s, shown_break_cost_run(s));
  if (groups.empty()) os << "<p class=ok>No graph breaks: every region was captured whole.</p>";
  if (!costs.empty()) {
    os << "<p class=muted>Cost per iteration, measured on the traced iterations of one run: the gap between the "
          "regions a break separates (eager code in Kiln's interpreter included), the guard checks of the next "
          "region, and the lost fusion: the kernels Kiln's scheduler fuses across the break when the two regions "
          "are joined, the separate kernels' time minus the fused ones', measured in the same process on the same "
          "inputs.</p><table><tr><th>#</th><th>break</th><th>line</th><th>cost</th><th>gap</th><th>interpreter</th>"
          "<th>guards</th><th>lost fusion</th><th>share of step</th></tr>";
    int n = 1;
    for (const auto& g : groups) {
      const auto* c = cost_of(costs, *g.first);
      if (!c) continue;
      if (!c->unmeasured.empty() || c->compiles > 0 || c->device_ms > 0) {  // an imported run's cost
        os << "<tr><td>" << n++ << "</td><td>" << esc(c->break_id) << "</td><td>" << esc(g.first->info.loc.str())
           << "</td><td colspan=6>" << esc(break_cost_text(*c)) << "</td></tr>";
        continue;
      }
      os << "<tr><td>" << n++ << "</td><td>" << esc(c->break_id) << "</td><td>" << esc(g.first->info.loc.str())
         << "</td><td>" << fixed(c->total_ms, 3) << " ms</td><td>" << fixed(c->gap_ms, 3) << " ms</td><td>"
         << fixed(c->interpreter_ms, 3) << " ms</td><td>" << fixed(c->guard_ms, 3) << " ms</td><td>"
         << esc(lost_fusion_text(*c)) << "</td><td>" << percent(c->share) << "</td></tr>";
    }
    os << "</table>";
  }
  int i = 1;
  for (const auto& g : groups) {
    const auto& b = g.first->info;
    const auto* c = cost_of(costs, *g.first);
    os << "<details open><summary><b>" << i++ << ". " << esc(b.id) << "</b> " << esc(b.reason) << " <span class=muted>at "
       << esc(b.loc.str()) << (b.module_path.empty() ? "" : " in " + esc(b.module_path)) << " &middot; hit " << g.hits
       << "x" << (c ? " &middot; costs " + esc(break_cost_text(*c)) : std::string()) << "</span></summary>";
    if (!b.loc.text.empty()) os << "<pre>" << b.loc.line << " | " << esc(b.loc.text) << "</pre>";
    if (!g.first->user_stack.empty()) {
      os << "<p class=muted>user stack:</p><pre>";
      for (const auto& f : g.first->user_stack) os << esc(f) << "\n";
      os << "</pre>";
    }
    os << "<p><span class=tag>hint</span>" << esc(b.hint) << "</p></details>";
  }
  os << "</section>";
}

void recompiles(std::ostringstream& os, const session::Session& s) {
  auto hist = recompile_history(s);
  os << "<section><h2>Recompiles</h2>";
  if (hist.empty()) os << "<p class=muted>No recompiles.</p>";
  else {
    os << "<table><tr><th>compile id</th><th>call</th><th>reason</th><th>failing guards</th></tr>";
    for (const auto& h : hist) {
      os << "<tr><td><code>" << esc(h.compile_id) << "</code>" << (h.limit ? " <span class=bad>limit reached</span>" : "")
         << "</td><td>" << (h.call >= 0 ? std::to_string(h.call) : "-") << "</td><td>" << esc(h.reason) << "</td><td>";
      for (const auto& f : h.failed_guards) os << "<code>" << esc(f) << "</code><br>";
      os << "</td></tr>";
    }
    os << "</table>";
  }
  os << "</section>";
}

// kiln explain --cost -o: what each region's recompiles cost and what following the advice did.
void recompile_costs(std::ostringstream& os, const session::Session& s) {
  const auto& c = s.recompile_costs;
  if (!c.measured()) return;
  os << "<section><h2>Recompiles: what they cost</h2><p class=muted>Measured on the first pass through "
     << c.calls << " call(s): each cache entry's capture and compile, guard checks that failed, and region calls "
        "run eagerly after the recompile limit.</p><table><tr><th>region</th><th>cache entries</th><th>compile</th>"
        "<th>failed guard checks</th><th>eager after the limit</th></tr>";
  for (const auto& r : c.regions) {
    os << "<tr><td>" << r.region << "</td><td>" << r.entries.size() << "</td><td>" << fixed(r.compile_ms, 3)
       << " ms</td><td>" << r.failed_guard_checks << " (" << fixed(r.failed_guard_ms, 3) << " ms)</td><td>"
       << (r.eager_fallback_calls > 0
               ? std::to_string(r.eager_fallback_calls) + "x (" + fixed(r.eager_fallback_ms, 3) + " ms)"
               : std::string(r.limit_reached ? "limit reached" : "-"))
       << "</td></tr>";
    for (const auto& e : r.entries)
      os << "<tr><td></td><td colspan=4><code>" << esc(e.compile_id) << "</code> " << esc(entry_recompile_text(e))
         << "</td></tr>";
  }
  os << "</table>";
  for (const auto& a : c.advice) os << "<p><span class=tag>advice</span>" << esc(a) << "</p>";
  if (c.has_effect) {
    os << "<h3>Following the advice, measured</h3><table><tr><th></th><th>as run</th><th>with the advice</th></tr>";
    for (const auto& row : dynamic_effect_rows(c.effect))
      os << "<tr><td>" << esc(row[0]) << "</td><td>" << esc(row[1]) << "</td><td>" << esc(row[2]) << "</td></tr>";
    os << "</table><p class=" << (c.effect.outputs_equal ? "ok" : "bad") << ">"
       << esc(dynamic_effect_outputs_text(c.effect)) << "</p>";
  } else if (c.advice.empty()) {
    os << "<p class=ok>No dimension kept changing: nothing to advise.</p>";
  }
  os << "</section>";
}

void regions(std::ostringstream& os, const session::Session& s) {
  os << "<section><h2>Compiled regions and their guards</h2>";
  for (const auto& r : s.regions) {
    os << "<details><summary><code>" << esc(r.compile_id) << "</code> <span class=muted>hits " << r.hits << ", "
       << r.guards.size() << " guards, compile " << fixed(r.compile_ms, 1) << " ms"
       << (r.recompile_reason.empty() ? "" : " &middot; recompiled because: " + esc(r.recompile_reason))
       << "</span></summary>";
    for (const auto& sym : r.symbols) os << "<div><span class=tag>symbol</span><code>" << esc(sym) << "</code></div>";
    os << "<pre>";
    for (const auto& g : r.guards) os << esc(g) << "\n";
    os << "</pre>";
    for (const auto& g : r.graphs) {
      if (!g.dot.empty()) {
        auto svg = dot_to_svg(g.dot);
        if (!svg.svg.empty()) os << "<p class=muted>graph (" << esc(g.stage) << ")</p><div class=svgbox>" << svg.svg << "</div>";
      }
      os << "<details><summary>" << esc(g.stage) << " graph (text)</summary><pre>" << esc(g.text) << "</pre></details>";
    }
    os << "</details>";
  }
  os << "</section>";
}

// Whether kernel_time shows the report's run `run`.
bool shows_kernel_time(const session::Session& s, int run) { return run >= 0 || s.runs.empty(); }

// Where the device time went in the report's run (gpu_kernel_stats.h): the ten longest kernels,
// the rest folded.
void kernel_time(std::ostringstream& os, const session::Session& s, int run, const KernelStats& st) {
  if (!shows_kernel_time(s, run)) return;
  if (st.records == 0) return;
  const bool dev = st.time_source == "device";
  std::string label = run < 0 ? "imported trace" : "";
  for (const auto& r : s.runs)
    if (r.id == run) label = r.mode + " / " + r.backend;
  int64_t launches = 0;
  for (const auto& k : st.kernels) launches += k.launches;
  os << "<section><h2>" << (dev ? "GPU" : "CPU") << " time per kernel: " << esc(label) << "</h2><p>"
     << (dev ? "Device" : "Host") << " time in kernels: <b>" << fixed(static_cast<double>(st.total_ns) / st.iterations / 1e6, 3)
     << " ms per iteration</b> in " << fixed(static_cast<double>(launches) / st.iterations, 1)
     << " launches (" << st.iterations << " traced iteration" << (st.iterations == 1 ? "" : "s") << ", "
     << grouped(st.records) << (dev ? " device records" : " host spans: no device records") << ").</p>";
  auto row = [&](size_t i) {
    const auto& k = st.kernels[i];
    std::string by = k.launched_by.empty() ? esc(k.launcher.empty() ? "-" : k.launcher)
                                           : "<code>" + esc(k.launched_by) + "</code> <span class=muted>" + esc(k.launcher) +
                                                 "</span>";
    os << "<tr><td class=num>" << i + 1 << "</td><td><code title=\"" << esc(k.name) << "\">"
       << esc(k.name.size() > 90 ? k.name.substr(0, 87) + "..." : k.name) << "</code></td><td>" << by
       << "</td><td class=num>" << fixed(k.launches_per_iter, 1) << "</td><td class=num>"
       << fixed(static_cast<double>(k.total_ns) / st.iterations / 1e6, 4) << "</td><td class=num>"
       << fixed(k.mean_ns / 1e3, 2) << "</td><td class=num>" << percent(k.share) << "</td></tr>";
  };
  const char* head = "<tr><th>#</th><th>kernel</th><th>launched by</th><th>launches/iter</th><th>ms/iter</th>"
                     "<th>mean &micro;s</th><th>share</th></tr>";
  os << "<table>" << head;
  const size_t top = std::min<size_t>(10, st.kernels.size());
  for (size_t i = 0; i < top; ++i) row(i);
  os << "</table>";
  if (st.kernels.size() > top) {
    os << "<details><summary>" << st.kernels.size() - top << " more kernels</summary><table>" << head;
    for (size_t i = top; i < st.kernels.size(); ++i) row(i);
    os << "</table></details>";
  }
  os << "</section>";
}

// st: the report run's kernel_stats.
void kernels(std::ostringstream& os, const session::Session& s, const KernelStats& st) {
  if (s.kernels.empty()) return;
  // Share of the report run's kernel time, per (compile id, kernel): names repeat across regions.
  os << "<section><h2>Generated kernels</h2><table><tr><th>kernel</th><th>compile id</th><th>language</th>"
        "<th>time share</th><th>launch</th><th>nodes fused</th></tr>";
  for (const auto& k : s.kernels) {
    const LauncherTime lt = launcher_time(st, k);
    const LauncherTime* time = lt.total_ns > 0 ? &lt : nullptr;
    std::string nodes;
    for (const auto& n : k.nodes) nodes += (nodes.empty() ? "" : ", ") + n;
    os << "<tr><td><code>" << esc(k.name) << "</code>";
    // A library call's record (a timed product: language cublas) has no source of its own to unfold.
    if (!k.source.empty()) os << "<details><summary class=muted>source</summary><pre>" << esc(k.source) << "</pre></details>";
    os << "</td><td><code>" << esc(k.compile_id) << "</code></td><td>" << esc(k.language)
       << "</td><td class=num>" << (time ? percent(time->share) : "-") << "</td><td>" << esc(k.launch_config)
       << "</td><td>" << esc(nodes) << "</td></tr>";
    if (!k.autotune.empty()) {
      os << "<tr><td></td><td colspan=5><table><tr><th>autotune candidate</th><th>ms</th></tr>";
      for (const auto& c : k.autotune)
        os << "<tr><td>" << (c.chosen ? "<b>" : "") << esc(c.config) << (c.chosen ? "</b>" : "") << "</td><td class=num>"
           << (c.ms < 0 ? std::string("-") : fixed(c.ms, 4)) << "</td></tr>";
      os << "</table></td></tr>";
    }
  }
  os << "</table></section>";
}

// What was live at each run's memory peak, per owner: the graph node behind a Kiln buffer or
// extern, eager's top-level op, or what the run kept from before the traced window.
void memory_at_peak(std::ostringstream& os, const session::Session& s, const RunMemoryPeaks& memory) {
  bool any = false;
  std::ostringstream body;
  for (const auto& r : s.runs) {
    for (const auto& lane : memory.of(r.id)) {
      if (lane.at_peak.empty()) continue;
      any = true;
      body << "<h3>" << esc(r.mode) << " / " << esc(r.backend) << " &middot; " << esc(lane.lane) << ": peak "
           << bytes(lane.peak_bytes) << "</h3><table><tr><th>owner</th><th>bytes</th><th>share</th></tr>";
      size_t shown = 0;
      const auto owners = folded_at_peak(lane);
      for (const auto& [owner, b] : owners) {
        if (++shown > 12) break;
        body << "<tr><td>" << esc(owner) << "</td><td class=num>" << bytes(b) << "</td><td class=num>"
             << (lane.peak_bytes > 0 ? percent(static_cast<double>(b) / static_cast<double>(lane.peak_bytes)) : "-")
             << "</td></tr>";
      }
      if (owners.size() > 12) body << "<tr><td class=muted>" << owners.size() - 12 << " more</td><td></td><td></td></tr>";
      body << "</table>";
    }
  }
  if (!any) return;
  os << "<section><h2>Memory at the peak</h2><p class=muted>Bytes the run allocated (weights excluded) and still "
        "held at the highest point of its traced iterations, by owner: <i>buffer</i> and <i>extern</i> name the "
        "graph node whose value Kiln keeps there, <i>layout copy of</i> a weight kept in the layout Kiln's kernels "
        "want, <i>CUDA graph</i> rows reduce-overhead's pools; <i>aten::</i> rows are eager's top-level ops.</p>"
     << body.str() << "</section>";
}

// Every run's timeline on one axis: the same time per pixel, so runs compare by eye. Each run's
// events are read once, as it is drawn (svg_timeline.h), and its section written out at once.
void timelines(const session::Session& s, session::SessionRows& rows, const ReportTimeline& t, OutputSink& out) {
  int64_t axis = 0;
  for (const auto& r : s.runs) {
    auto it = t.extent.find(r.id);
    if (it != t.extent.end()) axis = std::max(axis, it->second.second - it->second.first);
  }
  bool first = true;
  for (const auto& r : s.runs) {
    if (!t.extent.count(r.id)) continue;  // no events
    TimelinePicture picture;
    rows.each_event(r.id, false, [&](const session::TimelineEvent& e) { picture.add(e); });
    if (picture.empty()) continue;
    std::ostringstream os;
    auto cost = t.tracing.find(r.id);
    os << "<section><h2>Timeline: " << esc(r.mode) << " / " << esc(r.backend) << "</h2>"
       << (first ? "<p class=muted>Every run's timeline is drawn on one axis (" + esc(duration_text(axis)) +
                       " wide): equal lengths are equal times.</p>"
                 : "")
       << (cost != t.tracing.end() ? "<p class=muted>" + esc(trace_cost_text(cost->second)) + "</p>" : "")
       << "<div class=svgbox>" << std::move(picture).svg(axis) << "</div></section>";
    out.write(os.str());
    first = false;
  }
}

// The report of `s` (its summary, regions and kernels) whose timeline is read from `rows`; written
// to `out` a section or one run's timeline at a time.
void write_report(const session::Session& s, session::SessionRows& rows, OutputSink& out) {
  const ReportTimeline t = read_report_timeline(rows);
  const int run = t.shown_run;
  KernelStats st;  // the report run's, read when a section shows it
  if (shows_kernel_time(s, run) || !s.kernels.empty()) st = kernel_stats(rows, run);
  std::ostringstream os;
  // Reports come from other people's sessions: no script, frame, form or remote load runs in one.
  os << "<!DOCTYPE html><html lang=en><head><meta charset=utf-8>"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
        "img-src data:; script-src 'none'; object-src 'none'; base-uri 'none'; form-action 'none'\">"
        "<title>Kiln report: " << esc(s.model.path)
     << "</title><style>" << kStyle << "</style></head><body><header><h1>Kiln report</h1><p>" << esc(s.model.path)
     << " &middot; " << esc(s.origin) << "</p></header><main>";
  verdict_first(os, s, t.memory);
  kernel_time(os, s, run, st);
  compiles(os, s);
  breaks(os, s);
  recompiles(os, s);
  recompile_costs(os, s);
  runs(os, s);
  out.write(os.str());
  os.str("");
  regions(os, s);
  kernels(os, s, st);
  memory_at_peak(os, s, t.memory);
  out.write(os.str());
  os.str("");
  timelines(s, rows, t, out);
  summary(os, s);
  if (!s.import_notes.empty()) {
    os << "<section><h2>Import notes</h2><table><tr><th>source</th><th>what</th><th>count</th><th>example</th></tr>";
    for (const auto& n : s.import_notes)
      os << "<tr><td>" << esc(n.source) << "</td><td>" << esc(n.what) << "</td><td class=num>" << n.count << "</td><td><code>"
         << esc(n.example) << "</code></td></tr>";
    os << "</table></section>";
  }
  os << "</main></body></html>\n";
  out.write(os.str());
}

}  // namespace

std::string render_html(const session::Session& s) {
  std::string text;
  StringSink sink(text);
  session::SessionInMemory rows(s);
  write_report(s, rows, sink);
  return text;
}

std::string render_html(session::SessionRows& rows) {
  std::string text;
  StringSink sink(text);
  write_html(rows, sink);
  return text;
}

void write_html(session::SessionRows& rows, OutputSink& out) {
  session::SessionCodeInMemory code(rows);  // regions and kernels: read many times, they grow with the code
  write_report(code.summary(), code, out);
}

}  // namespace kiln::report
