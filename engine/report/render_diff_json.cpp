// The comparison of two sessions as JSON; see render_diff.h.
#include <nlohmann/json.hpp>

#include "engine/base/json_text.h"
#include "engine/report/render_diff.h"
#include "engine/report/render_diff_text.h"

namespace kiln::report {

namespace {

using nlohmann::ordered_json;

ordered_json side_json(const DiffSide& s) {
  return ordered_json{{"input", s.label}, {"origin", s.origin}, {"model", s.model}, {"torch", s.torch_version},
                      {"device", s.device}};
}

ordered_json run_json(const std::optional<session::Run>& r) {
  if (!r) return nullptr;
  return ordered_json{{"mode", r->mode},
                      {"backend", r->backend},
                      {"device", r->device},
                      {"status", r->status},
                      {"median_ms", r->latency.median_ms},
                      {"compile_cold_ms", r->compile_cold_ms},
                      {"compile_warm_ms", r->compile_warm_ms},
                      {"kernels_per_iter", r->kernels_per_iter},
                      {"gpu_busy", r->gpu_busy},
                      {"peak_memory_bytes", r->peak_memory_bytes},
                      {"max_rel_error", r->max_rel_error}};
}

ordered_json rows_json(const std::vector<StructureRow>& rows, const ModuleTime& t, bool lines) {
  ordered_json a = ordered_json::array();
  for (const auto& r : rows) {
    ordered_json j{{lines ? "line" : "module", r.key}, {"unattributed", r.unattributed}, {"total_ns", r.total_ns},
                   {"ms_per_iter", t.per_iter_ms(r.total_ns)}, {"records", r.records}};
    if (lines) j["code"] = r.code;
    a.push_back(std::move(j));
  }
  return a;
}

ordered_json structure_side_json(const StructureSide& s) {
  if (!s.present) return nullptr;
  return ordered_json{{"run", s.run_label},
                      {"time_source", s.time.time_source},
                      {"iterations", s.time.iterations},
                      {"records", s.time.records},
                      {"total_ns", s.time.total_ns},
                      {"ms_per_iter", s.total_ms},
                      {"module_coverage", s.module_coverage},
                      {"line_coverage", s.line_coverage},
                      {"modules_self", rows_json(s.time.modules, s.time, false)},
                      {"lines", rows_json(s.time.lines, s.time, true)}};
}

ordered_json ms_json(double v) { return v < 0 ? ordered_json(nullptr) : ordered_json(v); }

}  // namespace

std::string render_diff_json(const SessionDiff& d) {
  ordered_json j;
  j["a"] = side_json(d.a);
  j["b"] = side_json(d.b);
  j["runs"] = ordered_json::array();
  for (const auto& p : d.runs) j["runs"].push_back({{"a", run_json(p.a)}, {"b", run_json(p.b)}});
  const auto& s = d.structure;
  ordered_json st;
  st["a"] = structure_side_json(s.a);
  st["b"] = structure_side_json(s.b);
  st["modules_inclusive"] = ordered_json::array();
  for (const auto& l : s.modules)
    st["modules_inclusive"].push_back(
        {{"module", l.key}, {"unattributed", l.unattributed}, {"a_ms", ms_json(l.a_ms)}, {"b_ms", ms_json(l.b_ms)}});
  st["lines"] = ordered_json::array();
  for (const auto& l : s.lines)
    st["lines"].push_back({{"line", l.key},
                           {"code", l.code},
                           {"unattributed", l.unattributed},
                           {"a_ms", ms_json(l.a_ms)},
                           {"b_ms", ms_json(l.b_ms)}});
  j["structure"] = st;
  j["breaks"] = ordered_json::array();
  for (const auto& b : d.breaks)
    j["breaks"].push_back({{"change", diff_text::change_name(b.change)},
                           {"where", b.where},
                           {"reason", b.reason},
                           {"module", b.module},
                           {"hits_a", b.hits_a},
                           {"hits_b", b.hits_b}});
  j["regions_same"] = d.regions_same;
  j["regions"] = ordered_json::array();
  for (const auto& r : d.regions) {
    ordered_json ops = ordered_json::array(), inputs = ordered_json::array();
    for (const auto& o : r.ops) ops.push_back({{"op", o.op}, {"a", o.a}, {"b", o.b}});
    for (const auto& in : r.inputs) inputs.push_back({{"name", in.name}, {"a", in.a}, {"b", in.b}});
    j["regions"].push_back({{"compile_id", r.compile_id},
                            {"in_a", r.in_a},
                            {"in_b", r.in_b},
                            {"graph_a", r.graph_a},
                            {"graph_b", r.graph_b},
                            {"ops_a", r.ops_a},
                            {"ops_b", r.ops_b},
                            {"recompile_a", r.recompile_a},
                            {"recompile_b", r.recompile_b},
                            {"guards_a", r.guards_a},
                            {"guards_b", r.guards_b},
                            {"guards_added", r.guards_added},
                            {"guards_removed", r.guards_removed},
                            {"ops", ops},
                            {"inputs", inputs}});
  }
  return safe_dump(j, 1) + "\n";
}

}  // namespace kiln::report
