// Shared cells of the diff renderers; see render_diff_text.h.
#include "engine/report/render_diff_text.h"

#include <algorithm>

#include "engine/report/number_text.h"

namespace kiln::report::diff_text {

std::string or_dash(const std::string& s) { return s.empty() ? "-" : s; }

std::string cut(const std::string& s, size_t n) { return s.size() > n ? s.substr(0, n - 3) + "..." : s; }

std::string arrow(const std::string& a, const std::string& b) { return a == b ? a : a + " → " + b; }

std::string change_name(Change c) {
  return c == Change::Added ? "added" : c == Change::Removed ? "removed" : "both";
}

namespace {

std::string label_of(const session::Run& r) { return r.mode + " / " + r.backend; }

void values(const std::optional<session::Run>& r, std::string& median, std::string& compile, std::string& kernels,
            std::string& busy, std::string& peak, std::string& error, std::string& status) {
  if (!r) {
    median = compile = kernels = busy = peak = error = "-";
    status = "(no such run)";
    return;
  }
  const bool ok = r->status == "ok";
  median = measured(r->latency.median_ms, 3, ok, true);
  compile = ok && (r->compile_cold_ms > 0 || r->compile_warm_ms > 0)
                ? fixed(r->compile_cold_ms, 1) + " / " + fixed(r->compile_warm_ms, 1)
                : "-";
  kernels = measured(r->kernels_per_iter, 1, ok, true);
  busy = ok && r->gpu_busy > 0 ? percent(r->gpu_busy) : "-";
  peak = ok && r->peak_memory_bytes > 0 ? bytes(r->peak_memory_bytes) : "-";
  error = r->mode == "eager" ? "-" : measured_error(r->max_rel_error, ok);
  status = r->status;
}

}  // namespace

RunValues run_values(const RunPair& p) {
  RunValues v;
  if (p.a && p.b && label_of(*p.a) != label_of(*p.b)) v.label = label_of(*p.a) + " ↔ " + label_of(*p.b);
  else v.label = label_of(p.a ? *p.a : *p.b);
  values(p.a, v.median_a, v.compile_a, v.kernels_a, v.busy_a, v.peak_a, v.error_a, v.status_a);
  values(p.b, v.median_b, v.compile_b, v.kernels_b, v.busy_b, v.peak_b, v.error_b, v.status_b);
  v.ratio = "-";
  if (p.a && p.b && p.a->status == "ok" && p.b->status == "ok" && p.a->latency.median_ms > 0 && p.b->latency.median_ms > 0)
    v.ratio = fixed(p.b->latency.median_ms / p.a->latency.median_ms, 2) + "x";
  return v;
}

std::string side_summary(const StructureSide& s) {
  if (!s.present) return "no kernel time recorded (no device records and no host spans of kernels)";
  const auto& t = s.time;
  return s.run_label + ": " + (t.time_source == "device" ? "device" : "host (no device records)") +
         " kernel time " + fixed(s.total_ms, 3) + " ms per iteration (" + std::to_string(t.iterations) +
         " iteration" + (t.iterations == 1 ? "" : "s") + ", " + grouped(t.records) + " records); modules attribute " +
         percent(s.module_coverage) + ", lines " + percent(s.line_coverage);
}

std::string ms_or_dash(double ms) { return ms < 0 ? "-" : fixed(ms, 3); }

std::string delta(double a_ms, double b_ms) {
  if (a_ms < 0 || b_ms < 0) return "-";
  const double d = b_ms - a_ms;
  std::string s = fixed(d, 3);
  return d >= 0 && s != "-" && s[0] != '-' ? "+" + s : s;
}

std::vector<size_t> top_rows(const std::vector<StructureLine>& rows, size_t limit, bool in_order) {
  std::vector<size_t> idx;
  for (size_t i = 0; i < rows.size(); ++i)
    if (!rows[i].unattributed) idx.push_back(i);
  auto larger = [&](size_t x, size_t y) {
    double mx = std::max(rows[x].a_ms, rows[x].b_ms), my = std::max(rows[y].a_ms, rows[y].b_ms);
    return mx != my ? mx > my : x < y;
  };
  if (idx.size() > limit) {
    std::stable_sort(idx.begin(), idx.end(), larger);
    idx.resize(limit);
    if (in_order) std::sort(idx.begin(), idx.end());
  } else if (!in_order) {
    std::stable_sort(idx.begin(), idx.end(), larger);
  }
  for (size_t i = 0; i < rows.size(); ++i)
    if (rows[i].unattributed) idx.push_back(i);
  return idx;
}

}  // namespace kiln::report::diff_text
