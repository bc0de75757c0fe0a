// TraceSessionBuilder: the state of one TORCH_TRACE import — which region each Dynamo compile id
// currently maps to, the interned file names, the compile timeline — and one handler per record
// type. import_torch_trace() feeds it records in file order and takes the session at the end.
// Internal to engine/importers (torch_trace.cpp, trace_compile_facts.cpp).
//
// add(record)
//   pre: record.envelope is an object. post: the record's content is in the session (see
//        torch_trace.h for where); nothing throws for bad content, problems go to the tally.
// finish(source)
//   post: the session with timeline sorted and import_notes filled; the builder is spent.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "engine/importers/torch_trace/compile_timeline.h"
#include "engine/importers/common/import_notes.h"
#include "engine/importers/common/json_doc.h"
#include "engine/importers/torch_trace/torch_trace_records.h"
#include "engine/session/session.h"

namespace kiln::importers {

class TraceSessionBuilder {
 public:
  explicit TraceSessionBuilder(ImportTally& tally);
  void add(const TraceRecord& record);
  session::Session finish(const std::string& source);

  // What the record refers to, for the handlers.
  struct Context {
    const TraceRecord* record = nullptr;
    std::string type;          // the envelope's event key ("dynamo_start", "artifact", ...)
    JsonValue meta;            // its value
    std::string dynamo_id;     // "0/0", "!1/0/0", "" when the record names no compile
    int frame = -1;
    int attempt = 0;
    int64_t t_ns = 0;          // since the first record
  };

 private:
  // Compile ids → regions (torch_trace.cpp).
  size_t region(const std::string& dynamo_id, bool opening = false);
  size_t region_of(const Context& c);  // the record's region, "[unknown]" when it names none
  std::string session_id(const std::string& dynamo_id);  // "[0/0]" or "[0/0]#2"
  void event(const Context& c, capture::Event::Kind kind, std::string message);

  // Handlers (torch_trace.cpp).
  void on_dynamo_start(const Context& c);
  void on_graph(const Context& c, const std::string& stage);
  void on_python_guards(const Context& c);
  void on_cpp_guards(const Context& c);
  void on_output_code(const Context& c);
  void on_chromium_event(const Context& c);
  void on_symbol(const Context& c);
  void on_generic(const Context& c, bool known);
  std::string frame_text(const JsonValue& frame);  // "file:line in name"
  // A stage's text; FX graph code (stages named *_graph) also as graph JSON, lines it could not
  // read counted in the tally (unless `record`'s payload is already noted as damaged: not intact).
  session::StageGraph stage_graph(const std::string& stage, std::string_view payload, const TraceRecord& record);

  // Handlers (trace_compile_facts.cpp).
  void on_compilation_metrics(const Context& c, const std::string& prefix);
  void on_artifact(const Context& c);
  void add_break(const Context& c, size_t region, const struct DynamoBreak& b);
  void set_recompile_reason(const Context& c, size_t region, const std::string& reason);

  struct RegionState {
    bool done = false;            // compilation_metrics seen
    bool python_guards = false;   // guards came from dynamo_guards
    bool recompile_event = false;
    std::vector<std::string> break_titles;
  };

  ImportTally& tally_;
  session::Session s_;
  std::vector<RegionState> state_;                     // parallel to s_.regions
  std::unordered_map<std::string, size_t> current_;    // Dynamo id → region index
  std::unordered_map<std::string, int> generations_;   // Dynamo id → regions made for it
  std::unordered_set<std::string> started_;            // Dynamo ids whose current region saw dynamo_start
  std::unordered_map<int64_t, std::string> strings_;   // interned file names
  CompileTimeline timeline_;
  JsonParser payload_parser_;
  int64_t first_time_ = -1;
  int output_files_ = 0;
};

}  // namespace kiln::importers
