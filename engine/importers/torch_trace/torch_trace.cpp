// The TORCH_TRACE import driver and the builder's bookkeeping: compile ids, regions, graphs,
// guards, output code, the compile timeline and the generic fallback. Compilation metrics and
// artifacts (breaks, recompiles, caches) are in trace_compile_facts.cpp.
#include "engine/importers/torch_trace/torch_trace.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <ctime>

#include "engine/base/error.h"
#include "engine/importers/common/byte_source.h"
#include "engine/importers/torch_trace/dynamo_text.h"
#include "engine/importers/torch_trace/fx_readable.h"
#include "engine/ir/to_json.h"
#include "engine/importers/torch_trace/output_code.h"
#include "engine/importers/torch_trace/record_pipeline.h"
#include "engine/importers/torch_trace/torch_trace_records.h"
#include "engine/importers/torch_trace/trace_session_builder.h"

namespace kiln::importers {

namespace {

// Keys of the envelope that give context rather than the record's type.
bool is_context_key(std::string_view k) {
  return k == "frame_id" || k == "frame_compile_id" || k == "attempt" || k == "rank" || k == "compiled_autograd_id" ||
         k == "has_payload" || k == "stack" || k == "pid" || k == "tid" || k == "timestamp";
}

// Record types whose generic handling is deliberate (not counted as unknown).
bool is_known_generic(std::string_view t) {
  static const char* kKnown[] = {"describe_tensor", "describe_storage", "describe_source", "guard_added",
                                 "guard_added_fast", "expression_created", "create_unbacked_symbol",
                                 "propagate_real_tensors_provenance", "exported_program", "link", "optimus",
                                 "dump_file", "symbolic_shape_specialization", "missing_fake_kernel",
                                 "mismatched_fake_kernel", "unbacked_symbol_binding", "compiled_autograd_graph",
                                 "graph_dump", "bwd_compilation_metrics", "aot_autograd_cache", "inductor_runtime",
                                 "guard_failure", "dynamo_error", "inductor_compile_metrics", "freeze_runtime_asserts",
                                 "sym_shape"};
  for (const char* k : kKnown)
    if (t == k) return true;
  return false;
}

bool is_graph_type(std::string_view t) {
  auto ends = [&](std::string_view s) { return t.size() >= s.size() && t.substr(t.size() - s.size()) == s; };
  return t == "dynamo_output_graph" || t == "exported_program" || t == "compiled_autograd_graph" ||
         ((t.substr(0, 4) == "aot_" || t.substr(0, 9) == "inductor_") && ends("_graph"));
}

std::string now_iso8601() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

}  // namespace

int rank_from_file_name(const std::string& path) {
  std::string name = path.substr(path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/') + 1);
  size_t at = name.rfind("rank_");
  if (at == std::string::npos) return -1;
  size_t i = at + 5, j = i;
  while (j < name.size() && std::isdigit(static_cast<unsigned char>(name[j]))) ++j;
  return j > i ? std::atoi(name.substr(i, j - i).c_str()) : -1;
}

session::Session import_torch_trace(const std::string& path, const TorchTraceOptions& options, TraceFacts* facts) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    throw Error(path + ": is a directory; give one log file (kiln import picks logs from a directory)");
  ByteSource source(path);
  ImportTally tally;
  TraceReaderOptions ro;
  ro.verify_md5 = options.verify_md5;
  ro.max_line_bytes = options.max_line_bytes;
  ro.max_payload_bytes = options.max_payload_bytes;
  // Records are read (and their digests checked) on other threads while this one builds the session.
  TraceRecordPipeline reader(source, tally, ro);
  TraceSessionBuilder builder(tally);
  TraceRecord record;
  int64_t records = 0;
  while (reader.next(record)) {
    builder.add(record);
    ++records;
  }
  if (facts) {
    facts->pid = reader.pid();
    facts->records = records;
    facts->bytes = source.bytes_read();
  }
  if (source.truncated()) tally.note("compressed stream cut short", path);
  session::Session s = builder.finish(path);
  if (s.rank < 0) s.rank = rank_from_file_name(path);
  return s;
}

TraceSessionBuilder::TraceSessionBuilder(ImportTally& tally) : tally_(tally), timeline_(tally) {
  s_.origin = "TORCH_TRACE import";
  s_.env.created_at = now_iso8601();
}

std::string TraceSessionBuilder::session_id(const std::string& dynamo_id) {
  auto it = current_.find(dynamo_id);
  if (it != current_.end()) return s_.regions[it->second].compile_id;
  return "[" + dynamo_id + "]";
}

size_t TraceSessionBuilder::region(const std::string& dynamo_id, bool opening) {
  auto it = current_.find(dynamo_id);
  if (it != current_.end()) {
    // Dynamo hands out the same id again after torch._dynamo.reset(): a compile that opens on a
    // finished region is a new one.
    if (!(opening && state_[it->second].done)) {
      if (opening) started_.insert(dynamo_id);
      return it->second;
    }
  }
  int generation = ++generations_[dynamo_id];
  session::CompiledRegion r;
  r.compile_id = "[" + dynamo_id + "]" + (generation > 1 ? "#" + std::to_string(generation) : "");
  r.region = -1;
  if (!dynamo_id.empty() && std::isdigit(static_cast<unsigned char>(dynamo_id[0])))
    r.region = std::atoi(dynamo_id.c_str());
  s_.regions.push_back(std::move(r));
  state_.emplace_back();
  current_[dynamo_id] = s_.regions.size() - 1;
  if (opening) started_.insert(dynamo_id);
  return s_.regions.size() - 1;
}

size_t TraceSessionBuilder::region_of(const Context& c) {
  return region(c.dynamo_id.empty() ? std::string("unknown") : c.dynamo_id);
}

void TraceSessionBuilder::event(const Context& c, capture::Event::Kind kind, std::string message) {
  capture::Event e;
  e.kind = kind;
  e.t_ns = c.t_ns;
  e.region = c.frame;
  e.compile_id = c.dynamo_id.empty() ? std::string() : session_id(c.dynamo_id);
  e.message = std::move(message);
  s_.events.push_back(std::move(e));
}

std::string TraceSessionBuilder::frame_text(const JsonValue& frame) {
  JsonValue file = frame["filename"];
  std::string name;
  if (file.is_number()) {
    auto it = strings_.find(file.i64());
    name = it == strings_.end() ? "<file " + std::to_string(file.i64()) + ">" : it->second;
  } else {
    name = std::string(file.str("?"));
  }
  return name + ":" + std::to_string(frame["line"].i64()) + " in " + std::string(frame["name"].str("?"));
}

void TraceSessionBuilder::add(const TraceRecord& record) {
  Context c;
  c.record = &record;
  record.envelope.each_field([&](std::string_view key, const JsonValue& value) {
    if (c.type.empty() && !is_context_key(key)) {
      c.type = std::string(key);
      c.meta = value;
    }
  });
  if (c.type.empty()) {
    tally_.note("record without an event type", "line " + std::to_string(record.line));
    return;
  }
  if (c.type == "str") {  // ["file name", id]
    JsonValue name, id;
    size_t i = 0;
    c.meta.each_element([&](const JsonValue& v) { (i++ == 0 ? name : id) = v; });
    if (name.is_string() && id.is_number()) strings_[id.i64()] = std::string(name.str());
    else tally_.note("malformed str record", "line " + std::to_string(record.line));
    return;
  }

  const JsonValue& env = record.envelope;
  JsonValue frame = env["frame_id"], compile = env["frame_compile_id"], ca = env["compiled_autograd_id"];
  if (ca.is_number()) {
    c.dynamo_id = "!" + std::to_string(ca.i64());
    if (frame.is_number() && compile.is_number())
      c.dynamo_id += "/" + std::to_string(frame.i64()) + "/" + std::to_string(compile.i64());
  } else if (frame.is_number() && compile.is_number()) {
    c.dynamo_id = std::to_string(frame.i64()) + "/" + std::to_string(compile.i64());
  } else if (c.meta["compile_id"].is_string()) {
    c.dynamo_id = std::string(c.meta["compile_id"].str());
  }
  c.frame = frame.is_number() ? static_cast<int>(frame.i64()) : -1;
  c.attempt = static_cast<int>(env["attempt"].i64(0));
  if (first_time_ < 0 && record.log_time_ns >= 0) first_time_ = record.log_time_ns;
  c.t_ns = record.log_time_ns >= 0 ? record.log_time_ns - first_time_ : 0;
  if (env["rank"].is_number()) {
    int rank = static_cast<int>(env["rank"].i64());
    if (s_.rank < 0) s_.rank = rank;
    else if (rank != s_.rank) tally_.note("record of another rank", "line " + std::to_string(record.line));
  }

  const std::string& t = c.type;
  if (t == "dynamo_start") on_dynamo_start(c);
  else if (is_graph_type(t)) on_graph(c, t);
  else if (t == "dynamo_guards") on_python_guards(c);
  else if (t == "dynamo_cpp_guards_str") on_cpp_guards(c);
  else if (t == "compilation_metrics") on_compilation_metrics(c, "");
  else if (t == "compilation_metrics_runtime") on_compilation_metrics(c, "runtime ");
  else if (t == "bwd_compilation_metrics") on_compilation_metrics(c, "bwd ");
  else if (t == "artifact") on_artifact(c);
  else if (t == "inductor_output_code") on_output_code(c);
  else if (t == "chromium_event") on_chromium_event(c);
  else if (t == "create_symbol") on_symbol(c);
  else on_generic(c, is_known_generic(t));
}

void TraceSessionBuilder::on_dynamo_start(const Context& c) {
  size_t r = region(c.dynamo_id.empty() ? std::string("unknown") : c.dynamo_id, c.attempt == 0);
  std::vector<std::string> frames;
  c.meta["stack"].each_element([&](const JsonValue& f) { frames.push_back(frame_text(f)); });
  auto& reg = s_.regions[r];
  std::string stack;
  for (const auto& f : frames) stack += (stack.empty() ? "" : "\n") + f;
  if (!stack.empty()) reg.metrics["start_stack"] = stack;
  if (reg.frame.empty() && !frames.empty()) {
    const std::string& inner = frames.back();  // "file:line in fn" → "fn at file:line"
    size_t in = inner.rfind(" in ");
    reg.frame = in == std::string::npos ? inner : inner.substr(in + 4) + " at " + inner.substr(0, in);
  }
  event(c, capture::Event::Kind::Capture, "compiling " + (reg.frame.empty() ? std::string("a frame") : reg.frame));
}

void TraceSessionBuilder::on_graph(const Context& c, const std::string& stage) {
  if (!c.record->has_payload) return on_generic(c, true);
  s_.regions[region_of(c)].graphs.push_back(stage_graph(stage, c.record->payload, *c.record));
}

session::StageGraph TraceSessionBuilder::stage_graph(const std::string& stage, std::string_view payload,
                                                     const TraceRecord& record) {
  session::StageGraph g{stage, std::string(payload), "", ""};
  const bool graph_stage = stage.size() > 6 && stage.compare(stage.size() - 6, 6, "_graph") == 0;
  if (!graph_stage || !looks_like_fx_readable(payload)) return g;
  try {
    auto fx = parse_fx_readable(payload);
    bool calls = false;
    for (const auto& n : fx.graph.nodes) calls |= n.op == ir::NodeOp::CallFunction;
    if (calls) g.json = ir::to_json(fx.graph, -1);
    if (fx.skipped_lines && record.intact()) tally_.note("FX graph lines not read (" + stage + ")", fx.first_skipped, fx.skipped_lines);
  } catch (const Error&) {
    // Not FX graph code after all (a JSON payload quoting it): kept as text only.
  }
  return g;
}

void TraceSessionBuilder::on_python_guards(const Context& c) {
  size_t r = region_of(c);
  std::string error;
  JsonValue list;
  if (!payload_parser_.parse(c.record->payload, list, &error) || !list.is_array()) {
    tally_.note("corrupt JSON payload (dynamo_guards)", "line " + std::to_string(c.record->line));
    return on_generic(c, true);
  }
  std::vector<std::string> guards;
  list.each_element([&](const JsonValue& g) {
    if (g["code"].is_string()) guards.emplace_back(g["code"].str());
  });
  s_.regions[r].guards = std::move(guards);
  state_[r].python_guards = true;
}

void TraceSessionBuilder::on_cpp_guards(const Context& c) {
  size_t r = region_of(c);
  auto& reg = s_.regions[r];
  reg.graphs.push_back({c.type, std::string(c.record->payload), "", ""});
  if (!state_[r].python_guards) reg.guards = guards_from_cpp_tree(c.record->payload);
}

void TraceSessionBuilder::on_output_code(const Context& c) {
  size_t r = region_of(c);
  std::string file(c.meta["filename"].str());
  if (file.empty()) file = "output_code_" + std::to_string(output_files_) + ".py";
  ++output_files_;
  auto kernels = kernels_from_output_code(c.record->payload, s_.regions[r].compile_id, file);
  for (auto& k : kernels) s_.kernels.push_back(std::move(k));
}

void TraceSessionBuilder::on_chromium_event(const Context& c) {
  JsonValue e;
  if (!payload_parser_.parse(c.record->payload, e) || !e.is_object()) {
    tally_.note("corrupt JSON payload (chromium_event)", "line " + std::to_string(c.record->line));
    return;
  }
  std::string id(e["args"]["compile_id"].str());
  if (id.empty()) id = c.dynamo_id;
  // "dynamo" opens a compile: after torch._dynamo.reset() it opens a fresh region for a reused id.
  if (!id.empty() && e["name"].str() == "dynamo" && e["ph"].str() == "B") region(id, true);
  timeline_.add(e, id.empty() ? std::string() : session_id(id));
}

void TraceSessionBuilder::on_symbol(const Context& c) {
  std::string sym(c.meta["symbol"].str()), source(c.meta["source"].str());
  if (sym.empty()) return on_generic(c, true);
  auto& syms = s_.regions[region_of(c)].symbols;
  std::string text = source.empty() ? sym : sym + " = " + source;
  if (std::find(syms.begin(), syms.end(), text) == syms.end()) syms.push_back(text);
}

void TraceSessionBuilder::on_generic(const Context& c, bool known) {
  if (!known) tally_.note("unrecognized event type '" + c.type + "' (kept as a generic record)",
                          "line " + std::to_string(c.record->line));
  if (c.record->has_payload) s_.regions[region_of(c)].graphs.push_back(stage_graph(c.type, c.record->payload, *c.record));
  bool meta_worth_keeping = !c.meta.is_object() || c.meta.size() > 0;
  if (meta_worth_keeping || !c.record->has_payload) {
    std::string m = c.meta.dump();
    event(c, capture::Event::Kind::Capture, c.type + (m.empty() || m == "{}" ? "" : " " + m));
  }
}

session::Session TraceSessionBuilder::finish(const std::string& source) {
  timeline_.finish(s_.timeline);
  s_.model.path = source;
  s_.import_notes = tally_.notes(source);
  state_.clear();
  current_.clear();
  return std::move(s_);
}

}  // namespace kiln::importers
