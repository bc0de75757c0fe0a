// Session → JSON text; see render_json.h.
#include "engine/report/render_json.h"

#include <nlohmann/json.hpp>

#include "engine/base/json_text.h"
#include "engine/report/json_stream.h"
#include "engine/report/memory_view.h"
#include "engine/report/recompile_costs.h"

namespace kiln::report {

using nlohmann::ordered_json;
using namespace kiln::session;  // NOLINT

namespace {

ordered_json env_json(const Environment& e) {
  return ordered_json{{"kiln_version", e.kiln_version}, {"libtorch_version", e.libtorch_version}, {"os", e.os},
                      {"cpu", e.cpu},   {"gpu", e.gpu},   {"driver", e.driver},
                      {"cuda", e.cuda}, {"created_at", e.created_at}};
}

ordered_json model_json(const ModelInfo& m) {
  ordered_json hist = ordered_json::object();
  for (const auto& [op, n] : m.op_histogram) hist[op] = n;
  return ordered_json{{"path", m.path},
                      {"sha256", m.sha256},
                      {"inputs", m.inputs},
                      {"op_histogram", hist},
                      {"parameter_count", m.parameter_count}};
}

ordered_json break_json(const GraphBreakRecord& r) {
  const auto& b = r.info;
  return ordered_json{{"id", b.id},
                      {"category", capture::break_category_info(b.category).name},
                      {"op", b.op},
                      {"reason", b.reason},
                      {"hint", b.hint},
                      {"source", {{"file", b.loc.file}, {"line", b.loc.line}, {"col", b.loc.col}, {"text", b.loc.text}}},
                      {"module_path", b.module_path},
                      {"ends_region", b.ends_region},
                      {"resumes_region", b.resumes_region},
                      {"hits", r.hits},
                      {"compile_id", r.compile_id},
                      {"user_stack", r.user_stack}};
}

ordered_json region_json(const CompiledRegion& r) {
  ordered_json graphs = ordered_json::array();
  for (const auto& g : r.graphs)
    graphs.push_back(ordered_json{{"stage", g.stage}, {"text", g.text}, {"json", g.json}, {"dot", g.dot}});
  ordered_json metrics = ordered_json::object();
  for (const auto& [k, v] : r.metrics) metrics[k] = v;
  return ordered_json{{"compile_id", r.compile_id}, {"region", r.region},
                      {"frame", r.frame},           {"graphs", graphs},
                      {"guards", r.guards},         {"symbols", r.symbols},
                      {"recompile_reason", r.recompile_reason}, {"compile_ms", r.compile_ms},
                      {"hits", r.hits},             {"metrics", metrics}};
}

ordered_json event_json(const capture::Event& e) {
  return ordered_json{{"kind", capture::event_kind_name(e.kind)}, {"t_ns", e.t_ns}, {"call", e.call},
                      {"region", e.region}, {"compile_id", e.compile_id}, {"message", e.message}};
}

ordered_json kernel_json(const Kernel& k) {
  ordered_json tune = ordered_json::array();
  for (const auto& a : k.autotune) tune.push_back(ordered_json{{"config", a.config}, {"ms", a.ms}, {"chosen", a.chosen}});
  return ordered_json{{"name", k.name},
                      {"compile_id", k.compile_id},
                      {"language", k.language},
                      {"source", k.source},
                      {"nodes", k.nodes},
                      {"launch_config", k.launch_config},
                      {"registers", k.registers},
                      {"shared_bytes", k.shared_bytes},
                      {"autotune", tune}};
}

ordered_json run_json(const Run& r) {
  return ordered_json{{"id", r.id},
                      {"mode", r.mode},
                      {"backend", r.backend},
                      {"device", r.device},
                      {"status", r.status},
                      {"compile_cold_ms", r.compile_cold_ms},
                      {"compile_warm_ms", r.compile_warm_ms},
                      {"first_call_ms", r.first_call_ms},
                      {"latency",
                       {{"median_ms", r.latency.median_ms},
                        {"p10_ms", r.latency.p10_ms},
                        {"p90_ms", r.latency.p90_ms},
                        {"iterations", r.latency.iterations}}},
                      {"kernels_per_iter", r.kernels_per_iter},
                      {"gpu_busy", r.gpu_busy},
                      {"launch_gap_ms", r.launch_gap_ms},
                      {"host_overhead_ms", r.host_overhead_ms},
                      {"peak_memory_bytes", r.peak_memory_bytes},
                      {"speedup_vs_eager", r.speedup_vs_eager},
                      {"max_abs_error", r.max_abs_error},
                      {"max_rel_error", r.max_rel_error}};
}

ordered_json timeline_json(const TimelineEvent& e) {
  ordered_json args;  // null when empty
  if (!e.args_json.empty()) {
    // Parsed only when shallow: a hostile session's deep nesting stays a string (printing recurses).
    if (text_nesting_depth(e.args_json) <= kMaxJsonDepth) args = ordered_json::parse(e.args_json, nullptr, false);
    if (args.is_discarded() || args.is_null()) args = e.args_json;
  }
  return ordered_json{{"run", e.run},           {"lane", e.lane},
                      {"name", e.name},         {"category", e.category},
                      {"start_ns", e.start_ns}, {"dur_ns", e.dur_ns},
                      {"compile_id", e.compile_id}, {"kernel", e.kernel},
                      {"correlation", e.correlation}, {"args", args}};
}

ordered_json memory_json(const std::vector<MemoryPeak>& lanes) {
  ordered_json out = ordered_json::array();
  for (const auto& lane : lanes) {
    ordered_json live = ordered_json::array();
    for (const auto& [owner, b] : lane.at_peak) live.push_back({{"owner", owner}, {"bytes", b}});
    out.push_back({{"lane", lane.lane}, {"peak_bytes", lane.peak_bytes}, {"peak_ns", lane.peak_ns},
                   {"samples", lane.samples}, {"live_at_peak", live}});
  }
  return out;
}

ordered_json break_cost_json(const BreakCost& c) {
  return ordered_json{{"run", c.run},
                      {"id", c.break_id},
                      {"reason", c.reason},
                      {"file", c.file},
                      {"line", c.line},
                      {"total_ms", c.total_ms},
                      {"share", c.share},
                      {"gap_ms", c.gap_ms},
                      {"interpreter_ms", c.interpreter_ms},
                      {"guard_ms", c.guard_ms},
                      {"step_ms", c.step_ms},
                      {"iterations", c.iterations},
                      {"gaps", c.gaps},
                      {"shared_gaps", c.shared_gaps},
                      {"fusion_pair", c.fusion_pair},
                      {"fusion_pair_ms", c.fusion_pair_ms},
                      {"device_ms", c.device_ms},
                      {"compile_ms", c.compile_ms},
                      {"compiles", c.compiles},
                      {"unmeasured", c.unmeasured},
                      {"lost_fusion", c.lost_fusion_checked
                                          ? ordered_json{{"measured", c.lost_fusion_unmeasured.empty()},
                                                         {"lost_ms", c.lost_fusion_ms},
                                                         {"fused_across", c.lost_fusion},
                                                         {"reason", c.lost_fusion_unmeasured}}
                                          : ordered_json(nullptr)}};
}

template <typename T, typename F>
void list(JsonStream& out, const char* name, const std::vector<T>& items, F to_json) {
  out.key(name);
  out.begin_array();
  for (const auto& item : items) out.value(to_json(item));
  out.end_array();
}

}  // namespace

void write_json(SessionRows& rows, OutputSink& sink) {
  const Session& s = rows.summary();
  JsonStream out(sink, 2);  // invalid UTF-8 in imported text is replaced, not fatal
  out.begin_object();
  out.key("schema_version");
  out.value(s.schema_version);
  out.key("origin");
  out.value(s.origin);
  out.key("rank");
  out.value(s.rank);
  out.key("environment");
  out.value(env_json(s.env));
  out.key("model");
  out.value(model_json(s.model));
  list(out, "graph_breaks", s.breaks, break_json);
  out.key("regions");
  out.begin_array();
  rows.each_region([&](const CompiledRegion& r) { out.value(region_json(r)); });
  out.end_array();
  list(out, "events", s.events, event_json);
  out.key("kernels");
  out.begin_array();
  rows.each_kernel([&](const Kernel& k) { out.value(kernel_json(k)); });
  out.end_array();
  list(out, "fusion", s.fusion, [](const FusionDecision& f) {
    return ordered_json{{"compile_id", f.compile_id}, {"first", f.first}, {"second", f.second}, {"fused", f.fused},
                        {"reason", f.reason}};
  });
  // Per run: what was live at its memory peak, by owner (report/memory_view.h).
  out.key("runs");
  out.begin_array();
  for (const auto& r : s.runs) {
    MemoryPeaks peaks;
    rows.each_event(r.id, true, [&](const TimelineEvent& e) { peaks.add(e); });
    ordered_json j = run_json(r);
    j["memory"] = memory_json(peaks.lanes());
    out.value(j);
  }
  out.end_array();
  // What each graph-break site cost per iteration, per run (report/break_costs.h), most costly first.
  list(out, "break_costs", s.break_costs, break_cost_json);
  // What recompiles cost (kiln explain --cost -o); null when not measured.
  out.key("recompile_costs");
  out.value(s.recompile_costs.measured() ? ordered_json::parse(recompile_costs_json(s.recompile_costs))
                                         : ordered_json(nullptr));
  out.key("timeline");
  out.begin_array();
  rows.each_event(std::nullopt, false, [&](const TimelineEvent& e) { out.value(timeline_json(e)); });
  out.end_array();
  list(out, "import_notes", s.import_notes, [](const ImportNote& n) {
    return ordered_json{{"source", n.source}, {"what", n.what}, {"count", n.count}, {"example", n.example}};
  });
  out.end_object();
  out.finish();
}

std::string render_json(const Session& s) {
  std::string text;
  StringSink sink(text);
  SessionInMemory rows(s);
  write_json(rows, sink);
  return text;
}

}  // namespace kiln::report
