// Imported compiles as tables; see compile_table.h.
#include "engine/report/compile_table.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "engine/base/json_text.h"

namespace kiln::report {

namespace {

const std::string* metric(const session::CompiledRegion& r, const std::string& key) {
  auto it = r.metrics.find(key);
  return it == r.metrics.end() || it->second.empty() ? nullptr : &it->second;
}

double number(const session::CompiledRegion& r, const std::string& key, double scale) {
  const std::string* v = metric(r, key);
  if (!v) return -1;
  try {
    return std::stod(*v) * scale;
  } catch (const std::exception&) {
    return -1;
  }
}

int count(const session::CompiledRegion& r, const std::string& key) {
  double v = number(r, key, 1);
  return v < 0 ? -1 : static_cast<int>(v);
}

// Defaults of configuration keys users change most, as PyTorch 2.5–2.11 ship them. A key missing
// here is shown only when its value differs between the log's compiles.
const std::map<std::string, std::string>& known_defaults() {
  static const std::map<std::string, std::string> d = {
      {"dynamo.cache_size_limit", "8"},
      {"dynamo.accumulated_cache_size_limit", "256"},
      {"dynamo.suppress_errors", "false"},
      {"dynamo.verify_correctness", "false"},
      {"dynamo.specialize_int", "false"},
      {"dynamo.assume_static_by_default", "true"},
      {"dynamo.automatic_dynamic_shapes", "true"},
      {"dynamo.capture_scalar_outputs", "false"},
      {"dynamo.capture_dynamic_output_shape_ops", "false"},
      {"dynamo.optimize_ddp", "true"},
      {"dynamo.error_on_recompile", "false"},
      {"dynamo.disable", "false"},
      {"dynamo.compiled_autograd", "false"},
      {"inductor.max_autotune", "false"},
      {"inductor.max_autotune_gemm", "false"},
      {"inductor.max_autotune_pointwise", "false"},
      {"inductor.coordinate_descent_tuning", "false"},
      {"inductor.freezing", "false"},
      {"inductor.debug", "false"},
      {"inductor.triton.cudagraphs", "false"},
      {"inductor.cpp_wrapper", "false"},
      {"inductor.force_disable_caches", "false"},
  };
  return d;
}

// Text from someone else's log: depth-bounded before parsing, never an exception.
std::optional<nlohmann::json> parse_json_text(const std::string& text) {
  if (text_nesting_depth(text) > kMaxJsonDepth) return std::nullopt;
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

std::string value_text(const nlohmann::json& v) {
  std::string t = v.is_string() ? "\"" + v.get<std::string>() + "\"" : safe_dump(v);
  return t.size() > 160 ? t.substr(0, 157) + "..." : t;
}

}  // namespace

bool is_compile_metric(const std::string& key) {
  static const std::set<std::string> shown = {
      "dynamo_cumulative_compile_time_us", "aot_autograd_cumulative_compile_time_us", "inductor_cumulative_compile_time_us",
      "inductor_compile_time_s", "entire_frame_compile_time_s", "backend_compile_time_s", "fx_graph_cache",
      "aotautograd_cache", "fx_graph_cache_key", "aotautograd_cache_key", "guard_count", "graph_op_count",
      "graph_node_count", "graph_input_count", "fail_type", "fail_reason", "fail_user_frame_filename",
      "fail_user_frame_lineno", "restart_reasons", "co_name", "co_filename", "co_firstlineno", "dynamo_config",
      "inductor_config", "start_stack", "frame_key", "cache_size", "accumulated_cache_size", "start_time",
      "start_time_us", "end_time_us", "duration_us", "compile_id", "python_version", "triton_version", "cuda_version",
      "log_format_version", "feature_usage"};
  return shown.count(key) > 0 || key.rfind("runtime ", 0) == 0;
}

std::vector<CompileRow> compile_rows(const session::Session& s) {
  std::vector<CompileRow> rows;
  for (const auto& r : s.regions) {
    if (!metric(r, "dynamo_cumulative_compile_time_us") && !metric(r, "entire_frame_compile_time_s") &&
        !metric(r, "co_name") && !metric(r, "fail_type"))
      continue;
    CompileRow row;
    row.compile_id = r.compile_id;
    row.frame = r.frame;
    if (row.frame.empty() && metric(r, "co_name")) {
      row.frame = *metric(r, "co_name");
      if (const auto* f = metric(r, "co_filename")) {
        std::string file = f->substr(f->find_last_of('/') + 1);
        row.frame += " at " + file + (metric(r, "co_firstlineno") ? ":" + *metric(r, "co_firstlineno") : "");
      }
    }
    row.total_ms = number(r, "entire_frame_compile_time_s", 1e3);
    if (row.total_ms < 0 && r.compile_ms > 0) row.total_ms = r.compile_ms;
    row.dynamo_ms = number(r, "dynamo_cumulative_compile_time_us", 1e-3);
    row.aot_ms = number(r, "aot_autograd_cumulative_compile_time_us", 1e-3);
    row.inductor_ms = number(r, "inductor_cumulative_compile_time_us", 1e-3);
    if (row.inductor_ms < 0) row.inductor_ms = number(r, "inductor_compile_time_s", 1e3);
    std::vector<std::string> cache;
    if (const auto* v = metric(r, "fx_graph_cache")) cache.push_back("FX graph " + *v);
    if (const auto* v = metric(r, "aotautograd_cache")) cache.push_back("AOT autograd " + *v);
    for (const auto& c : cache) row.cache += (row.cache.empty() ? "" : ", ") + c;
    row.guards = count(r, "guard_count");
    if (row.guards < 0 && !r.guards.empty()) row.guards = static_cast<int>(r.guards.size());
    row.graph_ops = count(r, "graph_op_count");
    if (const auto* v = metric(r, "fail_type")) row.fail_type = *v;
    if (const auto* v = metric(r, "fail_reason")) row.fail_reason = *v;
    if (const auto* v = metric(r, "restart_reasons")) {
      auto j = parse_json_text(*v);
      if (j && j->is_array()) {
        for (const auto& x : *j) row.restart_reasons.push_back(x.is_string() ? x.get<std::string>() : safe_dump(x));
      } else if (*v != "[]") {
        row.restart_reasons.push_back(*v);
      }
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string restarts_text(const CompileRow& row) {
  std::string out;
  for (const auto& x : row.restart_reasons) out += (out.empty() ? "" : "; ") + x;
  return out;
}

ConfigDifferences config_differences(const session::Session& s) {
  ConfigDifferences out;
  // (config.key) → value text → compile ids
  std::map<std::string, std::map<std::string, std::vector<std::string>>> seen;
  for (const auto& r : s.regions)
    for (const char* config : {"dynamo", "inductor"}) {
      const std::string* text = metric(r, std::string(config) + "_config");
      if (!text) continue;
      auto j = parse_json_text(*text);
      if (!j || !j->is_object()) continue;
      for (const auto& [k, v] : j->items()) seen[std::string(config) + "." + k][value_text(v)].push_back(r.compile_id);
    }
  const auto& defaults = known_defaults();
  for (const auto& [key, values] : seen) {
    auto d = defaults.find(key);
    const bool varies = values.size() > 1;
    const bool off_default = d != defaults.end() && (values.size() != 1 || values.begin()->first != d->second);
    if (!varies && !off_default) {
      ++out.hidden;
      continue;
    }
    for (const auto& [value, ids] : values) {
      if (d != defaults.end() && value == d->second && !varies) continue;
      ConfigDifference c;
      c.config = key.substr(0, key.find('.'));
      c.key = key.substr(key.find('.') + 1);
      c.value = value;
      c.default_value = d == defaults.end() ? "" : d->second;
      c.compile_ids = ids;
      c.differs_between_compiles = varies;
      out.keys.push_back(std::move(c));
    }
  }
  return out;
}

}  // namespace kiln::report
