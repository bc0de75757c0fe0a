// Session run → Chrome trace JSON; see render_chrome_trace.h.
#include "engine/report/render_chrome_trace.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "engine/base/error.h"
#include "engine/base/json_text.h"
#include "engine/report/json_stream.h"
#include "engine/report/gpu_kernel_stats.h"

namespace kiln::report {

using nlohmann::ordered_json;

namespace {

std::string process_of(const std::string& lane) {
  auto slash = lane.find('/');
  return slash == std::string::npos ? lane : lane.substr(0, slash);
}

ordered_json metadata(const char* name, int pid, int tid, const std::string& value) {
  return ordered_json{{"name", name}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", {{"name", value}}}};
}

}  // namespace

void write_chrome_trace(session::SessionRows& rows, int run_id, OutputSink& sink) {
  const session::Session& s = rows.summary();
  // Times are relative to the run's first event (otherData.start_ns), so that microseconds with
  // nanosecond fractions stay exact in a double even for clock values since the epoch.
  const int64_t origin = rows.earliest_start(run_id);
  JsonStream out(sink, 1);
  out.begin_object();
  out.key("displayTimeUnit");
  out.value("ns");
  out.key("traceEvents");
  out.begin_array();
  std::map<std::string, int> pids;                 // process name → pid
  std::map<std::string, std::pair<int, int>> ids;  // lane → (pid, tid)
  rows.each_event(run_id, false, [&](const session::TimelineEvent& e) {
    auto lane = ids.find(e.lane);
    if (lane == ids.end()) {
      std::string process = process_of(e.lane);
      auto [p, new_process] = pids.emplace(process, static_cast<int>(pids.size()) + 1);
      if (new_process) out.value(metadata("process_name", p->second, 0, process));
      int tid = static_cast<int>(ids.size()) + 1;
      lane = ids.emplace(e.lane, std::make_pair(p->second, tid)).first;
      out.value(metadata("thread_name", p->second, tid, e.lane));
    }
    ordered_json args{{"category", e.category}};
    if (!e.compile_id.empty()) args["compile_id"] = e.compile_id;
    if (!e.kernel.empty()) args["kernel"] = e.kernel;
    if (e.correlation >= 0) args["correlation"] = e.correlation;
    if (!e.args_json.empty()) {
      ordered_json extra;  // parsed only when shallow: printing recurses
      if (text_nesting_depth(e.args_json) <= kMaxJsonDepth) extra = ordered_json::parse(e.args_json, nullptr, false);
      if (extra.is_object()) {
        for (auto it = extra.begin(); it != extra.end(); ++it)
          if (!args.contains(it.key())) args[it.key()] = std::move(it.value());
      } else {
        args["args_json"] = e.args_json;
      }
    }
    ordered_json ev{{"name", e.name}, {"cat", e.category.empty() ? "event" : e.category}};
    ev["ph"] = e.dur_ns > 0 ? "X" : "i";
    ev["ts"] = static_cast<double>(e.start_ns - origin) / 1000.0;
    if (e.dur_ns > 0) ev["dur"] = static_cast<double>(e.dur_ns) / 1000.0;
    else ev["s"] = "t";
    ev["pid"] = lane->second.first;
    ev["tid"] = lane->second.second;
    ev["args"] = std::move(args);
    out.value(ev);
  });
  out.end_array();
  session::Run imported;  // an import-wide export: no run of its own
  imported.mode = "imported";
  const session::Run* run = &imported;
  for (const auto& r : s.runs)
    if (r.id == run_id) run = &r;
  out.key("otherData");
  out.value(ordered_json{{"producer", "kiln"}, {"model", s.model.path}, {"mode", run->mode},
                         {"backend", run->backend}, {"device", run->device}, {"run", run_id},
                         {"start_ns", origin}});
  out.end_object();
  out.finish();
}

std::string render_chrome_trace(const session::Session& s, const std::string& mode) {
  session::SessionInMemory rows(s);
  const int run_id = find_run(rows, mode);
  std::string text;
  StringSink sink(text);
  write_chrome_trace(rows, run_id, sink);
  return text;
}

}  // namespace kiln::report
