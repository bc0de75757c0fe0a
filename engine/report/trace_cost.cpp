// A run's tracing cost, from its profiler event; see trace_cost.h.
#include "engine/report/trace_cost.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "engine/base/json_text.h"
#include "engine/report/number_text.h"

namespace kiln::report {

namespace {

double number_at(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return 0;
  double v = it->get<double>();
  return std::isfinite(v) ? v : 0;
}

int64_t count_at(const nlohmann::json& j, const char* key) {
  double v = number_at(j, key);
  return v > 0 && v < 9e18 ? static_cast<int64_t>(v) : 0;
}

std::string cut(const std::string& s, size_t n) { return s.size() > n ? s.substr(0, n) + "..." : s; }

}  // namespace

std::optional<TraceCost> trace_cost_of(const session::TimelineEvent& e) {
  if (e.category != "profiler" || e.args_json.empty()) return std::nullopt;
  if (text_nesting_depth(e.args_json) > kMaxJsonDepth) return std::nullopt;
  auto j = nlohmann::json::parse(e.args_json, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  TraceCost c;
  auto error = j.find("error");
  if (error != j.end() && error->is_string()) c.error = error->get<std::string>();
  auto overhead = j.find("overhead");
  if (c.error.empty() && (overhead == j.end() || !overhead->is_number())) return std::nullopt;
  c.overhead = number_at(j, "overhead");
  c.timed_iterations = static_cast<int>(std::min<int64_t>(count_at(j, "timed_iterations"), 1 << 30));
  c.cupti = j.contains("cupti_records") || !c.error.empty();
  c.dropped = count_at(j, "dropped_records");
  auto graphs = j.find("graph_records");
  auto detail = j.find("kernel_detail");
  if (graphs != j.end() && graphs->is_number() && detail != j.end() && detail->is_object()) {
    c.graphs_whole = true;
    c.graph_records = static_cast<int>(std::min<int64_t>(count_at(j, "graph_records"), 1 << 30));
    c.detail_iterations = static_cast<int>(std::min<int64_t>(count_at(*detail, "iterations"), 1 << 30));
    c.detail_overhead = number_at(*detail, "overhead");
    c.detail_moved_ms = std::max(0.0, number_at(*detail, "drawn_earlier_ns") / 1e6);
    auto derr = detail->find("error");
    if (derr != detail->end() && derr->is_string() && c.error.empty())
      c.error = "kernel detail: " + derr->get<std::string>();
  }
  return c;
}

std::string trace_cost_text(const TraceCost& c) {
  std::string out;
  const std::string median = c.timed_iterations > 0 ? "the median of " + std::to_string(c.timed_iterations) +
                                                          " traced iterations"
                                                    : "the traced iterations' median";
  if (!c.error.empty() && !c.graphs_whole) return "Device tracing (CUPTI) failed: " + cut(c.error, 200) + ".";
  if (!c.cupti)
    return "Traced on the host (Kiln's spans, LibTorch's ops, memory samples): " + median + " ran " +
           signed_percent(c.overhead) + " against the untraced median.";
  out = "Device traced with CUPTI: " + median + " ran " + signed_percent(c.overhead) +
        " against the untraced median";
  if (c.graphs_whole) {
    out += "; CUDA graphs recorded whole (" + std::to_string(c.graph_records) + " graph records), their kernels from " +
           std::to_string(c.detail_iterations) + " detail iterations after the window (" +
           signed_percent(c.detail_overhead) +
           (c.detail_moved_ms > 0 ? "; drawn right after it, they ran " + fixed(c.detail_moved_ms, 1) + " ms later" : "") + ")";
    if (!c.error.empty()) out += "; " + cut(c.error, 200);
  } else {
    out += "; every kernel recorded";
  }
  if (c.dropped > 0) out += "; " + std::to_string(c.dropped) + " records dropped";
  return out + ".";
}

}  // namespace kiln::report
