// Session → GitHub Markdown; see render_markdown.h.
#include "engine/report/render_markdown.h"

#include <algorithm>
#include <sstream>

#include "engine/base/control_chars.h"
#include "engine/report/break_groups.h"
#include "engine/report/gpu_kernel_stats.h"
#include "engine/report/markdown_text.h"
#include "engine/report/observations.h"
#include "engine/report/number_text.h"
#include "engine/report/recompile_history.h"

namespace kiln::report {

using namespace kiln::session;  // NOLINT

namespace {

using markdown::code;
using markdown::md;
using markdown::longest_backtick_run;
using markdown::without_cr;

// A fenced code block whose fence no line of `text` can close.
std::string fenced(const std::string& raw, const std::string& lang = "") {
  std::string text = visible_controls(without_cr(raw));
  std::string fence(std::max<size_t>(3, longest_backtick_run(text) + 1), '`');
  std::string body = text;
  if (!body.empty() && body.back() != '\n') body += '\n';
  return fence + lang + "\n" + body + fence + "\n";
}

std::string or_dash(const std::string& s) { return s.empty() ? "-" : md(s); }

std::string ms(double v) { return v > 0 ? fixed(v, 3) : (v == 0 ? "-" : fixed(v, 3)); }

// The answer first: the verdict, what Kiln noticed, and the few numbers that say why.
void verdict_first(std::ostream& os, const Session& s) {
  std::string model = s.model.path.empty() ? "(no model)" : s.model.path;
  os << "# Kiln session: " << md(model) << "\n\n";
  os << "**Verdict:** " << md(verdict(s)) << "\n\n";
  auto seen = observations(s);
  for (const auto& o : seen) os << "- " << md(o) << "\n";
  if (!seen.empty()) os << "\n";
  if (s.runs.empty()) return;
  os << "| run | status | median ms | vs eager | GPU busy | launch gap ms | kernels/iter | peak memory | max rel error |\n"
        "|---|---|--:|--:|--:|--:|--:|--:|--:|\n";
  for (const auto& r : s.runs) {
    const bool ok = r.status == "ok";
    std::string status = r.status.size() > 80 ? r.status.substr(0, 77) + "..." : r.status;
    os << "| " << md(r.mode) << (r.backend.empty() || r.backend == "kiln" || r.backend == "eager" ? "" : " / " + md(r.backend))
       << " | " << md(status) << " | " << measured(r.latency.median_ms, 3, ok) << " | "
       << (ok && r.speedup_vs_eager > 0 ? speedup(r.speedup_vs_eager) : "-") << " | "
       << (ok && r.gpu_busy > 0 ? percent(r.gpu_busy) : "-") << " | " << (ok ? ms(r.launch_gap_ms) : "-") << " | "
       << measured(r.kernels_per_iter, 1, ok) << " | " << (ok && r.peak_memory_bytes > 0 ? bytes(r.peak_memory_bytes) : "-")
       << " | " << measured_error(r.max_rel_error, ok) << " |\n";
  }
}

void summary(std::ostream& os, const Session& s) {
  auto groups = group_breaks(s.breaks);
  int recompiles = static_cast<int>(recompile_history(s).size());
  os << "\n## Session\n\n";
  os << "- origin: " << or_dash(s.origin) << (s.rank >= 0 ? " (rank " + std::to_string(s.rank) + ")" : "") << "\n";
  os << "- runs: " << s.runs.size();
  for (size_t i = 0; i < s.runs.size(); ++i) os << (i == 0 ? " (" : ", ") << md(s.runs[i].mode);
  os << (s.runs.empty() ? "" : ")") << "\n";
  os << "- compiled regions: " << s.regions.size() << "\n";
  os << "- graph breaks: " << s.breaks.size() << " (" << groups.size() << " unique)\n";
  os << "- recompiles: " << recompiles << "\n";
  os << "- kernels: " << s.kernels.size() << "\n";
}

void environment(std::ostream& os, const Session& s) {
  const auto& e = s.env;
  const auto& m = s.model;
  os << "\n## Environment\n\n| | |\n|---|---|\n";
  os << "| Kiln | " << or_dash(e.kiln_version) << " |\n";
  os << "| LibTorch | " << or_dash(e.libtorch_version) << " |\n";
  os << "| OS | " << or_dash(e.os) << " |\n";
  os << "| CPU | " << or_dash(e.cpu) << " |\n";
  os << "| GPU | " << (e.gpu.empty() ? "none" : md(e.gpu)) << " |\n";
  os << "| Driver | " << or_dash(e.driver) << " |\n";
  os << "| CUDA | " << or_dash(e.cuda) << " |\n";
  os << "| Created | " << or_dash(e.created_at) << " |\n";
  os << "| Model | " << (m.path.empty() ? "-" : code(m.path)) << " |\n";
  os << "| SHA-256 | " << (m.sha256.empty() ? "-" : code(m.sha256)) << " |\n";
  std::string inputs;
  for (const auto& i : m.inputs) inputs += (inputs.empty() ? "" : ", ") + code(i);
  os << "| Inputs | " << (inputs.empty() ? "-" : inputs) << " |\n";
  os << "| Parameters | " << grouped(m.parameter_count) << " |\n";
  if (!m.op_histogram.empty()) {
    std::vector<std::pair<std::string, int>> ops(m.op_histogram.begin(), m.op_histogram.end());
    std::stable_sort(ops.begin(), ops.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    std::string list;
    for (const auto& [op, n] : ops) list += (list.empty() ? "" : ", ") + code(op) + " " + std::to_string(n);
    os << "| Ops | " << list << " |\n";
  }
}

void modes(std::ostream& os, const Session& s) {
  os << "\n## Modes (every column)\n\n";
  if (s.runs.empty()) {
    os << "No runs recorded.\n";
    return;
  }
  os << "| mode | backend | device | status | median ms | p10 ms | p90 ms | iters | speedup vs eager | compile cold ms "
        "| compile warm ms | first call ms | kernels/iter | GPU busy | launch gap ms | host overhead ms | peak memory "
        "| max abs error | max rel error |\n";
  os << "|---|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n";
  for (const auto& r : s.runs) {
    const auto& l = r.latency;
    const bool ok = r.status == "ok";
    os << "| " << md(r.mode) << " | " << or_dash(r.backend) << " | " << or_dash(r.device) << " | " << md(r.status)
       << " | " << ms(l.median_ms) << " | " << ms(l.p10_ms) << " | " << ms(l.p90_ms) << " | "
       << (ok ? std::to_string(l.iterations) : "-") << " | " << speedup(r.speedup_vs_eager) << " | "
       << ms(r.compile_cold_ms) << " | " << ms(r.compile_warm_ms) << " | " << ms(r.first_call_ms) << " | "
       << measured(r.kernels_per_iter, 1, ok) << " | "
       << (r.gpu_busy > 0 ? percent(r.gpu_busy) : "-") << " | " << ms(r.launch_gap_ms) << " | "
       << ms(r.host_overhead_ms) << " | " << (r.peak_memory_bytes > 0 ? bytes(r.peak_memory_bytes) : "-") << " | "
       << measured_error(r.max_abs_error, ok) << " | " << measured_error(r.max_rel_error, ok) << " |\n";
  }
}

void graph_breaks(std::ostream& os, const Session& s) {
  auto groups = group_breaks(s.breaks);
  os << "\n## Graph breaks (" << s.breaks.size() << ", " << groups.size() << " unique)\n\n";
  if (groups.empty()) {
    os << "None: the model was captured without breaking.\n";
    return;
  }
  int i = 1;
  for (const auto& g : groups) {
    const auto& b = g.first->info;
    os << i++ << ". **" << md(b.id) << " " << md(capture::break_category_info(b.category).name) << "** at "
       << (b.loc.known() ? code(b.loc.str(), false) : std::string("unknown line"))
       << (b.module_path.empty() ? "" : " in " + code(b.module_path, false)) << " (hit " << g.hits << "x";
    if (g.sites > 1) os << ", " << g.sites << " sites";
    os << ")";
    if (!b.op.empty()) os << ", op " << code(b.op, false);
    os << "\n";
    if (!b.loc.text.empty()) {
      std::string block = fenced(std::to_string(b.loc.line) + " | " + b.loc.text, "python");
      std::istringstream lines(block);
      for (std::string l; std::getline(lines, l);) os << "   " << l << "\n";
    }
    os << "   - reason: " << md(b.reason) << "\n";
    if (!b.hint.empty()) os << "   - hint: " << md(b.hint) << "\n";
    if (!g.compile_ids.empty()) {
      os << "   - compile ids:";
      for (const auto& c : g.compile_ids) os << " " << code(c, false);
      os << "\n";
    }
    if (!g.first->user_stack.empty()) {
      os << "   - user stack (innermost last):\n";
      for (const auto& f : g.first->user_stack) os << "     - " << code(f, false) << "\n";
    }
  }
}

void recompiles(std::ostream& os, const Session& s) {
  auto history = recompile_history(s);
  os << "\n## Recompiles (" << history.size() << ")\n\n";
  if (history.empty()) {
    os << "None.\n";
    return;
  }
  os << "| compile id | call | region | reason | failed guards |\n|---|--:|--:|---|---|\n";
  for (const auto& r : history) {
    std::string guards;
    for (const auto& g : r.failed_guards) guards += (guards.empty() ? "" : "<br>") + code(g);
    os << "| " << code(r.compile_id) << " | " << (r.call >= 0 ? std::to_string(r.call) : "-") << " | "
       << (r.region >= 0 ? std::to_string(r.region) : "-") << " | " << (r.limit ? "**limit reached** " : "")
       << md(r.reason) << " | " << (guards.empty() ? "-" : guards) << " |\n";
  }
}

void guards(std::ostream& os, const Session& s) {
  os << "\n## Guards per region\n";
  if (s.regions.empty()) {
    os << "\nNo compiled regions.\n";
    return;
  }
  for (const auto& r : s.regions) {
    os << "\n### " << md(r.compile_id) << (r.region >= 0 ? " region " + std::to_string(r.region) : "");
    if (!r.frame.empty()) os << " " << code(r.frame, false);
    os << "\n\n";
    os << "- hits: " << r.hits << ", compile: " << fixed(r.compile_ms, 3) << " ms\n";
    if (!r.recompile_reason.empty()) os << "- recompiled because: " << md(r.recompile_reason) << "\n";
    for (const auto& sym : r.symbols) os << "- symbol " << code(sym, false) << "\n";
    if (!r.graphs.empty()) {
      os << "- graphs:";
      for (const auto& g : r.graphs) os << " " << code(g.stage, false);
      os << "\n";
    }
    for (const auto& [k, v] : r.metrics) os << "- " << md(k) << ": " << md(v) << "\n";
    os << "\n" << r.guards.size() << " guard" << (r.guards.size() == 1 ? "" : "s") << ":\n\n";
    if (!r.guards.empty()) {
      std::string text;
      for (const auto& g : r.guards) text += g + "\n";
      os << fenced(text);
    }
  }
}

// Where the device time went in the report's run: the ten longest kernels, the rest in one line.
void kernel_time(std::ostream& os, const Session& s) {
  const int run = report_run(s);
  if (run < 0 && s.runs.size() > 0) return;
  auto st = kernel_stats(s, run);
  if (st.records == 0) return;
  os << "\n" << render_kernel_stats_markdown(s, st, 10, 2);
}

void kernels(std::ostream& os, const Session& s) {
  os << "\n## Generated kernels (" << s.kernels.size() << ")\n\n";
  if (s.kernels.empty()) {
    os << "None recorded.\n";
    return;
  }
  os << "| kernel | compile id | language | nodes | launch | registers | shared bytes | autotune (chosen) |\n"
        "|---|---|---|---|---|--:|--:|---|\n";
  for (const auto& k : s.kernels) {
    std::string nodes;
    for (const auto& n : k.nodes) nodes += (nodes.empty() ? "" : ", ") + n;
    std::string tune = "-";
    for (const auto& a : k.autotune)
      if (a.chosen) tune = code(a.config) + " " + fixed(a.ms, 4) + " ms of " + std::to_string(k.autotune.size());
    os << "| " << code(k.name) << " | " << (k.compile_id.empty() ? "-" : code(k.compile_id)) << " | "
       << or_dash(k.language) << " | " << (nodes.empty() ? "-" : code(nodes)) << " | "
       << (k.launch_config.empty() ? "-" : code(k.launch_config)) << " | " << k.registers << " | " << k.shared_bytes
       << " | " << tune << " |\n";
  }
}

void import_notes(std::ostream& os, const Session& s) {
  if (s.import_notes.empty()) return;
  os << "\n## Import notes\n\n| source | what | count | example |\n|---|---|--:|---|\n";
  for (const auto& n : s.import_notes)
    os << "| " << or_dash(n.source) << " | " << md(n.what) << " | " << n.count << " | "
       << (n.example.empty() ? "-" : code(n.example)) << " |\n";
}

}  // namespace

std::string render_markdown(const Session& s) {
  std::ostringstream os;
  verdict_first(os, s);
  kernel_time(os, s);
  summary(os, s);
  environment(os, s);
  modes(os, s);
  graph_breaks(os, s);
  recompiles(os, s);
  guards(os, s);
  kernels(os, s);
  import_notes(os, s);
  return os.str();
}

}  // namespace kiln::report
