// The builder's handlers for what a compile concluded: compilation_metrics (times, counts,
// restart reasons, failures, recompile reasons) and artifact records (graph-break reasons with user
// stacks, recompile reasons, cache hits and misses, Triton kernel info, other named texts).
#include <cstdio>

#include "engine/importers/torch_trace/dynamo_text.h"
#include "engine/importers/torch_trace/trace_session_builder.h"

namespace kiln::importers {

namespace {

// A metric value as text: numbers as written, strings raw, structures as JSON.
std::string metric_text(const JsonValue& v) {
  if (v.is_string()) return std::string(v.str());
  if (v.is_bool()) return v.boolean() ? "true" : "false";
  return v.dump();
}

bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

}  // namespace

void TraceSessionBuilder::add_break(const Context& c, size_t r, const DynamoBreak& b) {
  auto& st = state_[r];
  for (const auto& title : st.break_titles)
    if (title == b.title) return;  // the artifact and restart_reasons tell of the same break
  st.break_titles.push_back(b.title);
  session::GraphBreakRecord rec;
  rec.info.category = classify_break(b);
  rec.info.id = capture::break_category_info(rec.info.category).id;
  rec.info.op = b.title;
  rec.info.reason = b.reason();
  rec.info.hint = b.hint();
  rec.info.loc = b.loc;
  rec.info.ends_region = s_.regions[r].region;
  rec.hits = 1;
  rec.compile_id = s_.regions[r].compile_id;
  rec.user_stack = b.user_stack;
  s_.breaks.push_back(std::move(rec));
  std::string where = b.loc.known() ? " at " + b.loc.file + ":" + std::to_string(b.loc.line) : "";
  event(c, capture::Event::Kind::GraphBreak, "graph break" + where + ": " + b.reason());
}

void TraceSessionBuilder::set_recompile_reason(const Context& c, size_t r, const std::string& reason) {
  if (reason.empty()) return;
  auto& reg = s_.regions[r];
  if (reg.recompile_reason.empty()) reg.recompile_reason = reason;
  if (!state_[r].recompile_event) {
    state_[r].recompile_event = true;
    event(c, capture::Event::Kind::Recompile, "recompiling: " + reason);
  }
}

void TraceSessionBuilder::on_compilation_metrics(const Context& c, const std::string& prefix) {
  size_t r = region_of(c);
  c.meta.each_field([&](std::string_view key, const JsonValue& v) {
    if (v.is_null() || (v.is_array() && v.size() == 0) || (v.is_string() && v.str().empty())) return;
    s_.regions[r].metrics[prefix + std::string(key)] = metric_text(v);
  });
  if (!prefix.empty()) return;  // runtime and backward metrics add numbers, not facts
  state_[r].done = true;
  auto& reg = s_.regions[r];
  const JsonValue& m = c.meta;
  if (m["entire_frame_compile_time_s"].is_number()) reg.compile_ms = m["entire_frame_compile_time_s"].f64() * 1e3;
  else if (m["dynamo_cumulative_compile_time_us"].is_number())
    reg.compile_ms = m["dynamo_cumulative_compile_time_us"].f64() / 1e3;
  if (m["co_name"].is_string()) {  // the compiled code itself: better than the innermost stack frame
    reg.frame = std::string(m["co_name"].str());
    if (m["co_filename"].is_string())
      reg.frame += " at " + std::string(m["co_filename"].str()) + ":" + std::to_string(m["co_firstlineno"].i64());
  }
  m["restart_reasons"].each_element([&](const JsonValue& reason) {
    if (reason.is_string() && !reason.str().empty()) add_break(c, r, parse_restart_reason(reason.str()));
  });
  if (m["fail_type"].is_string()) {
    std::string msg = "compile failed: " + std::string(m["fail_type"].str());
    if (m["fail_reason"].is_string()) msg += ": " + std::string(m["fail_reason"].str());
    if (m["fail_user_frame_filename"].is_string())
      msg += " (at " + std::string(m["fail_user_frame_filename"].str()) + ":" +
             std::to_string(m["fail_user_frame_lineno"].i64()) + ")";
    event(c, capture::Event::Kind::EagerFallback, msg);
  }
  if (m["recompile_reason"].is_string()) set_recompile_reason(c, r, std::string(m["recompile_reason"].str()));
}

void TraceSessionBuilder::on_artifact(const Context& c) {
  std::string name(c.meta["name"].str());
  std::string_view payload = c.record->payload;
  if (name.empty()) return on_generic(c, false);
  size_t r = region_of(c);

  if (name == "dynamo_graph_break_reason") {
    add_break(c, r, parse_graph_break_artifact(payload));
    return;
  }
  if (name == "recompile_reasons") {
    // Written as JSON (a list of strings) by some versions, as plain lines by others.
    std::string text;
    JsonValue v;
    if (payload_parser_.parse(payload, v) && (v.is_array() || v.is_string())) {
      if (v.is_string()) text = std::string(v.str());
      v.each_element([&](const JsonValue& e) { text += (text.empty() ? "" : "\n") + e.text(); });
    } else {
      text = std::string(payload);
    }
    set_recompile_reason(c, r, text);
    return;
  }
  // <cache>_cache_hit / _cache_miss / _cache_bypass / _cache_hash, e.g. fx_graph_cache_miss.
  size_t cache_at = name.rfind("_cache_");
  if (cache_at != std::string::npos) {
    std::string cache = name.substr(0, cache_at), outcome = name.substr(cache_at + 7);
    JsonValue v;
    bool json = payload_parser_.parse(payload, v) && v.is_object();
    auto& metrics = s_.regions[r].metrics;
    std::string key = json ? std::string(v["key"].str()) : std::string();
    if (!key.empty()) metrics[cache + "_cache_key"] = key;
    if (outcome == "hash") return;
    metrics[cache + "_cache"] = outcome;
    std::string msg = name + (key.empty() ? "" : " key=" + key);
    if (json && v["cache_bypass_reason"].is_string()) msg += ": " + std::string(v["cache_bypass_reason"].str());
    if (json && v["time_saved_ms"].is_number()) {
      char buf[48];
      std::snprintf(buf, sizeof buf, " (saved %.1f ms)", v["time_saved_ms"].f64());
      msg += buf;
    }
    event(c, outcome == "hit" ? capture::Event::Kind::CacheHit : capture::Event::Kind::Capture, msg);
    return;
  }
  if (name == "triton_kernel_info") {  // {"triton_poi_fused_add_0": {"compile_time_us": ..., ...}}
    JsonValue v;
    if (payload_parser_.parse(payload, v) && v.is_object()) {
      v.each_field([&](std::string_view kernel, const JsonValue& info) {
        info.each_field([&](std::string_view key, const JsonValue& value) {
          s_.regions[r].metrics["kernel " + std::string(kernel) + " " + std::string(key)] = metric_text(value);
        });
      });
      return;
    }
  }
  if (!c.record->has_payload) return on_generic(c, true);
  // Any other named text (before_pre_grad_graph, fx_graph_runnable, dynamo_error, ...) is a stage.
  s_.regions[r].graphs.push_back(stage_graph(name, payload, *c.record));
  if (name == "dynamo_error" || ends_with(name, "_error"))
    event(c, capture::Event::Kind::EagerFallback, name + ": " + std::string(payload.substr(payload.rfind('\n') + 1)));
}

}  // namespace kiln::importers
