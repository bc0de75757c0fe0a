// Session → GitHub Markdown; see render_markdown.h.
#include "engine/report/render_markdown.h"

#include <algorithm>
#include <iterator>
#include <set>
#include <sstream>

#include "engine/base/control_chars.h"
#include "engine/report/break_costs.h"
#include "engine/report/break_groups.h"
#include "engine/report/compile_table.h"
#include "engine/report/gpu_kernel_stats.h"
#include "engine/report/markdown_text.h"
#include "engine/report/memory_view.h"
#include "engine/report/observations.h"
#include "engine/report/number_text.h"
#include "engine/report/recompile_costs.h"
#include "engine/report/recompile_history.h"
#include "engine/report/report_timeline.h"

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

// Markdown of any session stays small enough to paste into an issue (about 60 KB at most): each
// list gets a share of that and ends, past it, with a line saying how much more the JSON report has.
struct Budget {
  std::ostream& os;
  std::streampos start;
  std::streamoff bytes;
  Budget(std::ostream& o, std::streamoff b) : os(o), start(o.tellp()), bytes(b) {}
  bool spent() { return start >= 0 && os.tellp() - start > bytes; }
  // Whether `more` bytes still fit; an item is never cut, and the first one always fits.
  bool fits(size_t more) {
    const std::streamoff used = start >= 0 ? os.tellp() - start : 0;
    return used == 0 || used + static_cast<std::streamoff>(more) <= bytes;
  }
};

std::string cut(const std::string& text, size_t n) { return text.size() > n ? text.substr(0, n - 3) + "..." : text; }

std::string ms(double v) { return v > 0 ? fixed(v, 3) : (v == 0 ? "-" : fixed(v, 3)); }

// The answer first: the verdict, what Kiln noticed, and the few numbers that say why.
void verdict_first(std::ostream& os, const Session& s, const RunMemoryPeaks& memory) {
  std::string model = s.model.path.empty() ? "(no model)" : s.model.path;
  os << "# Kiln session: " << md(model) << "\n\n";
  os << "**Verdict:** " << md(verdict(s)) << "\n\n";
  auto seen = observations(s, memory);
  for (size_t i = 0; i < seen.size() && i < 20; ++i) os << "- " << md(cut(seen[i], 200)) << "\n";
  if (seen.size() > 20) os << "- … " << seen.size() - 20 << " more\n";
  if (!seen.empty()) os << "\n";
  if (s.runs.empty()) return;
  os << "| run | status | median ms | vs eager | GPU busy | launch gap ms | kernels/iter | peak memory | max rel error |\n"
        "|---|---|--:|--:|--:|--:|--:|--:|--:|\n";
  Budget budget(os, 4000);
  for (const auto& r : s.runs) {
    if (budget.spent()) break;
    const bool ok = r.status == "ok";
    std::string status = cut(r.status, 80);
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
  for (size_t i = 0; i < s.runs.size() && i < 12; ++i) os << (i == 0 ? " (" : ", ") << md(cut(s.runs[i].mode, 40));
  if (s.runs.size() > 12) os << ", …";
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
    for (size_t i = 0; i < ops.size() && i < 40; ++i)
      list += (list.empty() ? "" : ", ") + code(cut(ops[i].first, 80)) + " " + std::to_string(ops[i].second);
    if (ops.size() > 40) list += ", … " + std::to_string(ops.size() - 40) + " more";
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
  Budget budget(os, 4000);
  for (const auto& r : s.runs) {
    if (budget.spent()) {
      os << "\n… more runs in the JSON report.\n";
      break;
    }
    const auto& l = r.latency;
    const bool ok = r.status == "ok";
    os << "| " << md(r.mode) << " | " << or_dash(r.backend) << " | " << or_dash(r.device) << " | " << md(cut(r.status, 300))
       << " | " << ms(l.median_ms) << " | " << ms(l.p10_ms) << " | " << ms(l.p90_ms) << " | "
       << (ok ? std::to_string(l.iterations) : "-") << " | " << speedup(r.speedup_vs_eager) << " | "
       << ms(r.compile_cold_ms) << " | " << ms(r.compile_warm_ms) << " | " << ms(r.first_call_ms) << " | "
       << measured(r.kernels_per_iter, 1, ok) << " | "
       << (r.gpu_busy > 0 ? percent(r.gpu_busy) : "-") << " | " << ms(r.launch_gap_ms) << " | "
       << ms(r.host_overhead_ms) << " | " << (r.peak_memory_bytes > 0 ? bytes(r.peak_memory_bytes) : "-") << " | "
       << measured_error(r.max_abs_error, ok) << " | " << measured_error(r.max_rel_error, ok) << " |\n";
  }
}

// What tracing each run's timeline window cost (trace_cost.h): how far its gaps and host spans are stretched.
void tracing_cost(std::ostream& os, const Session& s, const std::map<int, TraceCost>& tracing) {
  if (tracing.empty()) return;
  os << "\n## What tracing cost\n\n";
  Budget budget(os, 4000);
  for (const auto& r : s.runs) {
    auto it = tracing.find(r.id);
    if (it == tracing.end() || budget.spent()) continue;
    os << "- **" << md(cut(r.mode, 80)) << " / " << md(cut(r.backend, 80)) << "**: " << md(trace_cost_text(it->second)) << "\n";
  }
}

// What was live at each run's memory peak: its five largest owners (all of them in the JSON report).
void memory_at_peak(std::ostream& os, const Session& s, const RunMemoryPeaks& memory) {
  std::ostringstream body;
  int rows = 0;
  for (const auto& r : s.runs) {
    if (rows >= 30) {
      body << "| … | | | more runs in the JSON report |\n";
      break;
    }
    for (const auto& lane : memory.of(r.id)) {
      if (lane.at_peak.empty()) continue;
      ++rows;
      body << "| " << md(r.mode) << " / " << or_dash(r.backend) << " | " << md(lane.lane.substr(7)) << " | "
           << bytes(lane.peak_bytes) << " | ";
      const auto owners = folded_at_peak(lane);
      for (size_t i = 0; i < owners.size() && i < 5; ++i)
        body << (i ? ", " : "") << md(cut(owners[i].first, 80)) << " " << bytes(owners[i].second);
      if (owners.size() > 5) body << ", " << owners.size() - 5 << " more";
      body << " |\n";
    }
  }
  if (body.str().empty()) return;
  os << "\n## Memory at the peak\n\nWhat each run allocated (weights excluded) and still held at the highest point "
        "of its traced iterations: *buffer* and *extern* name the graph node Kiln keeps there, *layout copy of* a "
        "weight in the layout Kiln's kernels want, *CUDA graph* rows reduce-overhead's pools, *aten::* rows eager's "
        "ops.\n\n"
        "| run | device | peak | largest owners at the peak |\n|---|---|--:|---|\n"
     << body.str();
}

void graph_breaks(std::ostream& os, const Session& s) {
  auto groups = ranked_break_groups(s);  // most costly first, where a run measured them
  const int cost_run = shown_break_cost_run(s);
  const auto costs = break_costs_of(s, cost_run);
  os << "\n## Graph breaks (" << s.breaks.size() << ", " << groups.size() << " unique)\n\n";
  if (groups.empty()) {
    os << "None: the model was captured without breaking.\n";
    return;
  }
  int i = 1;
  Budget budget(os, 7000);
  for (const auto& g : groups) {
    if (budget.spent()) {
      os << "\n… and " << groups.size() - static_cast<size_t>(i - 1) << " more (every break is in the JSON report).\n";
      break;
    }
    const auto& b = g.first->info;
    os << i++ << ". **" << md(b.id) << " " << md(capture::break_category_info(b.category).name) << "** at "
       << (b.loc.known() ? code(b.loc.str(), false) : std::string("unknown line"))
       << (b.module_path.empty() ? "" : " in " + code(b.module_path, false)) << " (hit " << g.hits << "x";
    if (g.sites > 1) os << ", " << g.sites << " sites";
    os << ")";
    if (!b.op.empty()) os << ", op " << code(b.op, false);
    if (const auto* c = cost_of(costs, *g.first)) {
      if (!c->unmeasured.empty() || c->compiles > 0 || c->device_ms > 0)  // an imported run's cost
        os << ", costs **" << md(break_cost_text(*c)) << "**" << (c->unmeasured.empty() ? " per profiler step" : "");
      else
        os << ", costs **" << break_cost_text(*c) << "** per iteration: gap " << fixed(c->gap_ms, 3)
           << " ms (interpreter " << fixed(c->interpreter_ms, 3) << " ms), guards " << fixed(c->guard_ms, 3) << " ms";
      if (c->lost_fusion_checked) {
        os << "; lost fusion ";
        if (c->lost_fusion_unmeasured.empty() && !c->lost_fusion.empty())
          os << fixed(c->lost_fusion_ms, 3) << " ms (" << code(cut(c->lost_fusion, 400), false) << ")";
        else
          os << md(cut(lost_fusion_text(*c), 400));
      }
    }
    os << "\n";
    if (!b.loc.text.empty()) {
      std::string block = fenced(std::to_string(b.loc.line) + " | " + cut(b.loc.text, 300), "python");
      std::istringstream lines(block);
      for (std::string l; std::getline(lines, l);) os << "   " << l << "\n";
    }
    os << "   - reason: " << md(cut(b.reason, 400)) << "\n";
    if (!b.hint.empty()) os << "   - hint: " << md(cut(b.hint, 300)) << "\n";
    if (!g.compile_ids.empty()) {
      os << "   - compile ids:";
      for (const auto& c : g.compile_ids) os << " " << code(c, false);
      os << "\n";
    }
    if (!g.first->user_stack.empty()) {
      os << "   - user stack (innermost last):\n";
      const auto& stack = g.first->user_stack;
      for (size_t f = stack.size() > 8 ? stack.size() - 8 : 0; f < stack.size(); ++f)  // the innermost eight
        os << "     - " << code(cut(stack[f], 200), false) << "\n";
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
  Budget budget(os, 4000);
  size_t shown = 0;
  for (const auto& r : history) {
    if (budget.spent()) {
      os << "\n… and " << history.size() - shown << " more recompiles (all in the JSON report).\n";
      break;
    }
    ++shown;
    std::string guards;
    for (const auto& g : r.failed_guards) guards += (guards.empty() ? "" : "<br>") + code(cut(g, 300));
    os << "| " << code(r.compile_id) << " | " << (r.call >= 0 ? std::to_string(r.call) : "-") << " | "
       << (r.region >= 0 ? std::to_string(r.region) : "-") << " | " << (r.limit ? "**limit reached** " : "")
       << md(cut(r.reason, 400)) << " | " << (guards.empty() ? "-" : guards) << " |\n";
  }
}

// kiln explain --cost -o: what each region's recompiles cost and what following the advice did.
void recompile_costs(std::ostream& os, const Session& s) {
  const auto& c = s.recompile_costs;
  if (!c.measured()) return;
  os << "\n## Recompiles: what they cost\n\nMeasured on the first pass through " << c.calls
     << " call(s): each cache entry's capture and compile, guard checks that failed, and region calls run eagerly "
        "after the recompile limit.\n\n";
  Budget budget(os, 4000);
  for (const auto& r : c.regions) {
    if (budget.spent()) {
      os << "\n… and more regions (all in the JSON report).\n";
      break;
    }
    os << "- region " << r.region << ": " << md(region_recompile_text(r)) << "\n";
    for (const auto& e : r.entries)
      os << "  - " << code(e.compile_id, false) << " " << md(cut(entry_recompile_text(e), 400)) << "\n";
  }
  for (const auto& a : c.advice) os << "\nAdvice: " << md(cut(a, 400)) << "\n";
  if (c.has_effect) {
    os << "\nFollowing the advice, measured:\n\n| | as run | with the advice |\n|---|--:|--:|\n";
    for (const auto& row : dynamic_effect_rows(c.effect))
      os << "| " << md(row[0]) << " | " << md(row[1]) << " | " << md(row[2]) << " |\n";
    os << "\n" << md(dynamic_effect_outputs_text(c.effect)) << "\n";
  } else if (c.advice.empty()) {
    os << "\nNo dimension kept changing: nothing to advise.\n";
  }
}

void guards(std::ostream& os, const Session& s) {
  os << "\n## Guards per region\n";
  if (s.regions.empty()) {
    os << "\nNo compiled regions.\n";
    return;
  }
  // One region entry as text: its numbers, then its guards (or how they differ from an earlier entry's).
  auto entry = [&](const session::CompiledRegion& r) {
    std::ostringstream item;
      item << "\n### " << md(r.compile_id) << (r.region >= 0 ? " region " + std::to_string(r.region) : "");
      if (!r.frame.empty()) item << " " << code(r.frame, false);
      item << "\n\n";
      item << "- hits: " << r.hits << ", compile: " << fixed(r.compile_ms, 3) << " ms\n";
      if (!r.recompile_reason.empty()) item << "- recompiled because: " << md(r.recompile_reason) << "\n";
      for (const auto& sym : r.symbols) item << "- symbol " << code(sym, false) << "\n";
      if (!r.graphs.empty()) {
        item << "- graphs:";
        for (const auto& g : r.graphs) item << " " << code(g.stage, false);
        item << "\n";
      }
      // An import's metrics are in the Compiles table (and all of them in the JSON report).
      const bool imported = r.metrics.count("co_name") > 0 || r.metrics.count("dynamo_cumulative_compile_time_us") > 0;
      for (const auto& [k, v] : r.metrics)
        if (!imported && !is_compile_metric(k)) item << "- " << md(k) << ": " << md(v.size() > 300 ? v.substr(0, 297) + "..." : v) << "\n";
      // A recompile often guards (nearly) what an earlier entry did: the differences, not the list again.
      const session::CompiledRegion* like = nullptr;
      size_t fewest = 0;
      for (const auto& earlier : s.regions) {
        if (&earlier == &r) break;
        if (earlier.guards.empty() || r.guards.empty()) continue;
        std::multiset<std::string> a(earlier.guards.begin(), earlier.guards.end()), b(r.guards.begin(), r.guards.end());
        std::vector<std::string> d;
        std::set_symmetric_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(d));
        if (d.size() * 2 <= r.guards.size() && (!like || d.size() < fewest)) {
          like = &earlier;
          fewest = d.size();
        }
      }
      if (like) {
        std::multiset<std::string> a(like->guards.begin(), like->guards.end()), b(r.guards.begin(), r.guards.end());
        std::vector<std::string> gone, added;
        std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(gone));
        std::set_difference(b.begin(), b.end(), a.begin(), a.end(), std::back_inserter(added));
        item << "\n" << r.guards.size() << " guards: " << (gone.empty() && added.empty() ? "the same as " : "those of ")
           << md(like->compile_id);
        if (gone.empty() && added.empty()) {
          item << ".\n";
          return item.str();
        }
        item << ", but:\n\n";
        std::string text;
        size_t listed = 0;
        for (const auto& g : gone)
          if (listed++ < 40) text += "- " + cut(g, 300) + "\n";
        for (const auto& g : added)
          if (listed++ < 40) text += "+ " + cut(g, 300) + "\n";
        if (listed > 40) text += "… " + std::to_string(listed - 40) + " more differences\n";
        item << fenced(text, "diff");
        return item.str();
      }
      item << "\n" << r.guards.size() << " guard" << (r.guards.size() == 1 ? "" : "s") << ":\n\n";
      if (!r.guards.empty()) {
        // Identical guard lines once, with ×N.
        std::vector<std::pair<std::string, int>> lines;
        for (const auto& g : r.guards) {
          auto it = std::find_if(lines.begin(), lines.end(), [&](const auto& l) { return l.first == g; });
          if (it == lines.end()) lines.push_back({g, 1});
          else ++it->second;
        }
        std::string text;
        for (size_t i = 0; i < lines.size() && i < 60; ++i)
          text += cut(lines[i].first, 300) + (lines[i].second > 1 ? "  ×" + std::to_string(lines[i].second) : "") + "\n";
        if (lines.size() > 60) text += "… " + std::to_string(lines.size() - 60) + " more (all in the JSON report)\n";
        item << fenced(text);
      }
    return item.str();
  };
  Budget budget(os, 20000);
  size_t shown = 0;
  for (const auto& r : s.regions) {
    std::string text = entry(r);
    if (!budget.fits(text.size())) {
      os << "\n… and " << s.regions.size() - shown << " more region entries (their guards are in the JSON report).\n";
      break;
    }
    ++shown;
    os << text;
  }
}

// An imported torch.compile log, laid out as tlparse does: each compile's time split and cache
// results, the compiles that failed or restarted, the configuration that is not the default.
void compiles(std::ostream& os, const Session& s) {
  auto rows = compile_rows(s);
  if (rows.empty()) return;
  auto t = [](double v) { return v < 0 ? std::string("-") : fixed(v, 1); };
  os << "\n## Compiles (" << rows.size() << ")\n\n"
     << "| compile id | frame | total ms | Dynamo ms | AOT autograd ms | Inductor ms | cache | guards | graph ops |\n"
     << "|---|---|--:|--:|--:|--:|---|--:|--:|\n";
  Budget budget(os, 8000);
  for (const auto& r : rows)
    if (!budget.spent()) os << "| " << code(r.compile_id) << " | " << or_dash(cut(r.frame, 160)) << " | " << t(r.total_ms) << " | " << t(r.dynamo_ms)
       << " | " << t(r.aot_ms) << " | " << t(r.inductor_ms) << " | " << or_dash(r.cache) << " | "
       << (r.guards < 0 ? "-" : std::to_string(r.guards)) << " | " << (r.graph_ops < 0 ? "-" : std::to_string(r.graph_ops))
       << " |\n";
  bool failures = false;
  for (const auto& r : rows) failures |= !r.fail_type.empty() || !r.restart_reasons.empty();
  if (failures) {
    os << "\n## Failures and restarts\n\n| compile id | fail type | reason | restarts |\n|---|---|---|---|\n";
    for (const auto& r : rows) {
      if (r.fail_type.empty() && r.restart_reasons.empty()) continue;
      auto cut = [](const std::string& v) { return v.size() > 300 ? v.substr(0, 297) + "..." : v; };
      os << "| " << code(r.compile_id) << " | " << or_dash(r.fail_type) << " | " << or_dash(cut(r.fail_reason)) << " | "
         << or_dash(cut(restarts_text(r))) << " |\n";
    }
  }
  auto config = config_differences(s);
  if (!config.keys.empty() || config.hidden > 0) {
    os << "\n## Configuration\n\n";
    if (config.keys.empty()) {
      os << "Every logged configuration key (" << config.hidden << ") is at its default or the same in every compile.\n";
    } else {
      os << "Keys that differ from the default or between compiles (" << config.hidden
         << " others at their default or the same everywhere are not listed).\n\n"
         << "| config | key | value | default | compiles |\n|---|---|---|---|---|\n";
      Budget budget(os, 5000);
      for (const auto& c : config.keys) {
        if (budget.spent()) break;
        std::string ids;
        for (size_t i = 0; i < c.compile_ids.size() && i < 6; ++i) ids += (ids.empty() ? "" : " ") + c.compile_ids[i];
        if (c.compile_ids.size() > 6) ids += " … (" + std::to_string(c.compile_ids.size()) + ")";
        os << "| " << c.config << " | " << code(c.key) << " | " << code(c.value) << " | "
           << (c.default_value.empty() ? "-" : code(c.default_value)) << " | " << md(ids) << " |\n";
      }
    }
  }
}

// Where the device time went in the report's run: the ten longest kernels, the rest in one line.
void kernel_time(std::ostream& os, const Session& s, SessionRows& rows, int run) {
  if (run < 0 && s.runs.size() > 0) return;
  auto st = kernel_stats(rows, run);
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
  Budget budget(os, 5000);
  size_t shown = 0;
  for (const auto& k : s.kernels) {
    if (budget.spent()) {
      os << "\n… and " << s.kernels.size() - shown << " more kernels (all, with their source, in the JSON and HTML reports).\n";
      break;
    }
    ++shown;
    std::string nodes;
    for (const auto& n : k.nodes) nodes += (nodes.empty() ? "" : ", ") + n;
    nodes = cut(nodes, 300);
    std::string tune = "-";
    for (const auto& a : k.autotune)
      if (a.chosen) tune = code(a.config) + " " + fixed(a.ms, 4) + " ms of " + std::to_string(k.autotune.size());
    os << "| " << code(k.name) << " | " << (k.compile_id.empty() ? "-" : code(k.compile_id)) << " | "
       << or_dash(k.language) << " | " << (nodes.empty() ? "-" : code(nodes)) << " | "
       << (k.launch_config.empty() ? "-" : code(cut(k.launch_config, 120))) << " | " << k.registers << " | " << k.shared_bytes
       << " | " << tune << " |\n";
  }
}

void import_notes(std::ostream& os, const Session& s) {
  if (s.import_notes.empty()) return;
  os << "\n## Import notes\n\n| source | what | count | example |\n|---|---|--:|---|\n";
  Budget budget(os, 3000);
  for (const auto& n : s.import_notes)
    if (!budget.spent()) os << "| " << or_dash(n.source) << " | " << md(n.what) << " | " << n.count << " | "
       << (n.example.empty() ? "-" : code(cut(n.example, 200))) << " |\n";
}

// The report of `s` (its summary, regions and kernels) whose timeline is read from `rows`.
std::string render(const Session& s, SessionRows& rows) {
  const ReportTimeline t = read_report_timeline(rows);
  std::ostringstream os;
  verdict_first(os, s, t.memory);
  kernel_time(os, s, rows, t.shown_run);
  compiles(os, s);
  summary(os, s);
  environment(os, s);
  modes(os, s);
  tracing_cost(os, s, t.tracing);
  memory_at_peak(os, s, t.memory);
  graph_breaks(os, s);
  recompiles(os, s);
  recompile_costs(os, s);
  guards(os, s);
  kernels(os, s);
  import_notes(os, s);
  return os.str();
}

}  // namespace

std::string render_markdown(const Session& s) {
  SessionInMemory rows(s);
  return render(s, rows);
}

std::string render_markdown(SessionRows& rows) {
  SessionCodeInMemory code(rows);  // regions and kernels: read many times, they grow with the code
  return render(code.summary(), code);
}

}  // namespace kiln::report
