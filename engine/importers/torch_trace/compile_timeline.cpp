// Pairing Dynamo's chromium B/E events into spans: one stack of open spans per (pid, tid); an E closes
// the innermost open span of its name, so interleaved timers of different names pair correctly.
#include "engine/importers/torch_trace/compile_timeline.h"

#include <algorithm>

namespace kiln::importers {

namespace {

int64_t id_of(const JsonValue& v) {
  if (v.is_number()) return v.i64();
  if (v.is_string()) return static_cast<int64_t>(std::hash<std::string_view>()(v.str()));
  return 0;
}

}  // namespace

// The event's args as minified JSON in scratch_ ("" when none): written into storage kept between
// events (a large args object grows it once, not by doubling each time), copied out only when kept.
const std::string& CompileTimeline::args_of(const JsonValue& event) {
  scratch_.clear();
  if (scratch_.capacity() > (size_t(64) << 20)) std::string().swap(scratch_);
  JsonValue args = event["args"];
  if (args.is_object() && args.size() > 0) args.dump_to(scratch_);
  return scratch_;
}

void CompileTimeline::add(const JsonValue& event, const std::string& compile_id) {
  std::string_view ph = event["ph"].str();
  std::string_view name = event["name"].str();
  int64_t ts_ns = us_to_ns(event["ts"].f64());
  auto key = std::make_pair(id_of(event["pid"]), id_of(event["tid"]));
  if (ph == "E") {
    auto& stack = stacks_[key];
    for (size_t i = stack.size(); i-- > 0;) {
      auto& span = spans_[stack[i]];
      if (span.name != name) continue;
      span.dur_ns = std::max<int64_t>(0, ts_ns - span.start_ns);
      const std::string& args = args_of(event);
      if (args.size() > span.args_json.size()) span.args_json = args;
      if (span.compile_id.empty()) span.compile_id = compile_id;
      open_[stack[i]] = false;
      stack.erase(stack.begin() + static_cast<std::ptrdiff_t>(i));
      return;
    }
    tally_.note("unmatched chromium_event end", std::string(name));
    return;
  }
  session::TimelineEvent e;
  e.lane = "compile";
  e.name = std::string(name);
  e.category = "compile";
  e.start_ns = ts_ns;
  e.compile_id = compile_id;
  e.args_json = args_of(event);
  if (ph == "X") e.dur_ns = std::max<int64_t>(0, us_to_ns(event["dur"].f64()));
  spans_.push_back(std::move(e));
  open_.push_back(ph == "B");
  if (ph == "B") stacks_[key].push_back(spans_.size() - 1);
}

void CompileTimeline::finish(std::vector<session::TimelineEvent>& out) {
  for (size_t i = 0; i < spans_.size(); ++i)
    if (open_[i]) tally_.note("unfinished compile span", spans_[i].name);
  std::stable_sort(spans_.begin(), spans_.end(),
                   [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; });
  for (auto& s : spans_) out.push_back(std::move(s));
  spans_.clear();
  open_.clear();
  stacks_.clear();
}

}  // namespace kiln::importers
