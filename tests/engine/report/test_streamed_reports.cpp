// The JSON report and the Chrome trace streamed from a session file (report::write_json,
// report::write_chrome_trace over session::SessionFile) are the texts the whole-document renderers
// make: byte for byte on the shipped sessions, laid out as nlohmann lays out the whole document, and
// a run's memory peaks gathered event by event equal the ones read from all its points.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>

#include "engine/report/gpu_kernel_stats.h"
#include "engine/report/json_stream.h"
#include "engine/report/memory_view.h"
#include "engine/report/render_chrome_trace.h"
#include "engine/report/render_json.h"
#include "engine/session/session_rows.h"
#include "engine/session/store.h"
#include "tests/support/paths.h"
#include "tests/support/session_builders.h"

using namespace kiln;
namespace fs = std::filesystem;
using nlohmann::ordered_json;

namespace {

std::vector<std::string> shipped_sessions() {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(test::example("sessions")))
    if (e.path().extension() == ".kiln") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

// The text as the whole-document renderers laid it out: parsed and dumped again in one piece.
std::string whole_document(const std::string& text, int indent) {
  return ordered_json::parse(text).dump(indent, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string streamed_json(const std::string& path) {
  session::SessionFile rows(path);
  std::string text;
  StringSink sink(text);
  report::write_json(rows, sink);
  return text;
}

}  // namespace

TEST(StreamedReports, JsonFromTheFileIsTheReportOfTheLoadedSession) {
  auto sessions = shipped_sessions();
  ASSERT_GE(sessions.size(), 3u);
  for (const auto& shipped : sessions) {
    SCOPED_TRACE(shipped);
    std::string path = test::temp_dir() + "/" + fs::path(shipped).filename().string();
    fs::copy_file(shipped, path);
    std::string text = streamed_json(path);
    EXPECT_EQ(text, report::render_json(session::load_session(path)));
    EXPECT_EQ(text, whole_document(text, 2));
    auto j = ordered_json::parse(text);
    EXPECT_FALSE(j["timeline"].empty());
    EXPECT_FALSE(j["kernels"].empty());
  }
}

TEST(StreamedReports, ChromeTraceFromTheFileIsTheTraceOfTheLoadedSession) {
  for (const auto& shipped : shipped_sessions()) {
    std::string path = test::temp_dir() + "/" + fs::path(shipped).filename().string();
    fs::copy_file(shipped, path);
    auto s = session::load_session(path);
    session::SessionFile rows(path);
    ASSERT_FALSE(s.runs.empty()) << shipped;
    for (const auto& r : s.runs) {
      SCOPED_TRACE(shipped + " " + r.mode + "/" + r.backend);
      const std::string which = r.mode + "/" + r.backend;
      std::string text;
      StringSink sink(text);
      report::write_chrome_trace(rows, report::find_run(rows, which), sink);
      EXPECT_EQ(text, report::render_chrome_trace(s, which));
      EXPECT_EQ(text, whole_document(text, 1));
      EXPECT_FALSE(ordered_json::parse(text)["traceEvents"].empty());
    }
    EXPECT_NE(test::error_of([&] { report::find_run(rows, "nope"); }).find("no run 'nope'"), std::string::npos);
  }
}

TEST(StreamedReports, ASessionWithoutRunsExportsItsImportWideEvents) {
  session::Session s;
  s.model.path = "m.py";
  s.timeline.push_back(test::timeline_event(-1, "compile", "compile", "[0/0]", 100, 50));
  s.timeline.push_back(test::timeline_event(-1, "compile/inductor", "compile", "[0/0] inductor", 120, 0));
  std::string path = test::temp_dir() + "/imported.kiln";
  session::save_session(path, s);
  session::SessionFile rows(path);
  ASSERT_EQ(report::find_run(rows, "default"), -1);
  std::string text;
  StringSink sink(text);
  report::write_chrome_trace(rows, -1, sink);
  EXPECT_EQ(text, report::render_chrome_trace(s, "default"));
  EXPECT_EQ(ordered_json::parse(text)["otherData"]["mode"], "imported");

  session::save_session(path, session::Session{});
  session::SessionFile empty(path);
  EXPECT_NE(test::error_of([&] { report::find_run(empty, "default"); }).find("no runs and no timeline events"),
            std::string::npos);
  EXPECT_EQ(streamed_json(path), report::render_json(session::Session{}));
}

// Memory lanes, several runs, odd args and invalid UTF-8: the streamed report equals the in-memory one.
TEST(StreamedReports, MemoryPeaksAndOddTextStreamAsTheyRender) {
  session::Session s;
  s.origin = std::string("bad \xff\xfe utf-8");
  for (int id : {0, 1}) {
    session::Run r;
    r.id = id;
    r.mode = id ? "default" : "eager";
    s.runs.push_back(r);
  }
  s.timeline.push_back(test::timeline_event(1, "host", "kernel", "k0", 0, 5000));
  for (int i = 0; i < 6; ++i) {
    auto e = test::timeline_event(i % 2, "memory cuda:0", i == 4 ? "memory peak" : "memory", "buffer " + std::to_string(i),
                                  1000 - 100 * i, 0);
    e.args_json = "{\"bytes\": " + std::to_string((i * 7919) % 5000) + "}";
    s.timeline.push_back(e);
  }
  auto odd = test::timeline_event(0, "host", "span", "line\nbreak \xc3", 5, 1);
  odd.args_json = "{\"empty\": {}, \"none\": [], \"nested\": [[], {}, [1, [2, {\"a\": \"\\n\"}]]]}";
  s.timeline.push_back(odd);
  auto not_json = odd;
  not_json.args_json = "{not json";
  s.timeline.push_back(not_json);
  std::string path = test::temp_dir() + "/odd.kiln";
  session::save_session(path, s);
  std::string text = streamed_json(path);
  EXPECT_EQ(text, report::render_json(session::load_session(path)));
  EXPECT_EQ(text, whole_document(text, 2));
  auto j = ordered_json::parse(text);
  ASSERT_EQ(j["runs"].size(), 2u);
  EXPECT_EQ(j["runs"][1]["memory"][0]["samples"], 3);
  EXPECT_EQ(j["runs"][0]["memory"][0]["live_at_peak"].size(), 1u);
  EXPECT_EQ(j["timeline"].back()["args"], "{not json");
}

// JsonStream against nlohmann's dump of the whole document, at both indents the reports use.
TEST(StreamedReports, JsonStreamLaysOutAsTheWholeDocument) {
  ordered_json doc = {{"a", ordered_json::array()},
                      {"b", ordered_json::object()},
                      {"c", {1, 2.5, "x\ny", nullptr, ordered_json::array(), {{"k", ordered_json::object()}}}},
                      {"d", {{"e", {{"f", {1, 2}}}}}},
                      {"bad \xff", "text \xc3"}};
  for (int indent : {1, 2}) {
    std::string text;
    StringSink sink(text);
    report::JsonStream out(sink, indent);
    out.begin_object();
    for (auto it = doc.begin(); it != doc.end(); ++it) {
      out.key(it.key());
      if (it.key() == "a") {
        out.begin_array();
        out.end_array();
      } else if (it.key() == "c") {
        out.begin_array();
        for (const auto& v : it.value()) out.value(v);
        out.end_array();
      } else if (it.key() == "d") {
        out.begin_object();
        out.key("e");
        out.value(it.value()["e"]);
        out.end_object();
      } else {
        out.value(it.value());
      }
    }
    out.end_object();
    out.finish();
    EXPECT_EQ(text, doc.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace) + "\n") << indent;
  }
}

TEST(StreamedReports, MemoryPeaksEqualTheLanesReadFromAllPoints) {
  std::mt19937 rng(7);
  for (int round = 0; round < 200; ++round) {
    std::vector<session::TimelineEvent> events;
    const int n = static_cast<int>(rng() % 12);
    for (int i = 0; i < n; ++i) {
      const char* lanes[] = {"memory cuda:0", "memory cpu", "host"};
      const char* categories[] = {"memory", "memory", "memory peak", "kernel"};
      auto e = test::timeline_event(0, lanes[rng() % 3], categories[rng() % 4], "owner " + std::to_string(rng() % 4),
                                    static_cast<int64_t>(rng() % 5) * 100, 0);
      e.args_json = rng() % 5 == 0 ? "odd" : "{\"bytes\": " + std::to_string(static_cast<int>(rng() % 7) * 10 - 10) + "}";
      events.push_back(e);
    }
    report::MemoryPeaks peaks;
    for (const auto& e : events) peaks.add(e);
    auto got = peaks.lanes();
    auto want = report::memory_lanes(events);
    ASSERT_EQ(got.size(), want.size()) << round;
    for (size_t i = 0; i < got.size(); ++i) {
      SCOPED_TRACE("round " + std::to_string(round) + " lane " + want[i].lane);
      EXPECT_EQ(got[i].lane, want[i].lane);
      EXPECT_EQ(got[i].samples, want[i].points.size());
      EXPECT_EQ(got[i].peak_bytes, want[i].peak_bytes);
      EXPECT_EQ(got[i].peak_ns, want[i].peak_ns);
      EXPECT_EQ(got[i].at_peak, want[i].at_peak);
    }
  }
}
