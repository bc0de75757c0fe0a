// The JSON report and the Chrome trace streamed from a session file (report::write_json,
// report::write_chrome_trace over session::SessionFile) are the texts the whole-document renderers
// make: byte for byte on the shipped sessions, laid out as nlohmann lays out the whole document, and
// a run's memory peaks gathered event by event equal the ones read from all its points. The HTML and
// Markdown reports and kiln stats read from the file (the timeline event by event) are the texts
// rendered from the loaded session: the shipped sessions, imports and sessions built here.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "engine/importers/import_files.h"
#include "engine/report/gpu_kernel_stats.h"
#include "engine/report/json_stream.h"
#include "engine/report/memory_view.h"
#include "engine/report/module_time.h"
#include "engine/report/render_chrome_trace.h"
#include "engine/report/render_html.h"
#include "engine/report/render_json.h"
#include "engine/report/render_markdown.h"
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

// Where two texts first differ, with a little of each around it ("" when equal): reports are too
// long for a test failure to print whole.
std::string first_difference(const std::string& got, const std::string& want) {
  if (got == want) return "";
  size_t i = 0;
  while (i < got.size() && i < want.size() && got[i] == want[i]) ++i;
  const size_t from = i > 80 ? i - 80 : 0;
  return "differ at byte " + std::to_string(i) + " of " + std::to_string(got.size()) + "/" +
         std::to_string(want.size()) + "\n  got:  ..." + got.substr(from, 200) + "\n  want: ..." + want.substr(from, 200);
}

// Graphviz orders a graph's clusters its own way from one call to the next (one session drawn twice
// in one process differs there): the graph pictures are compared by their place, not byte for byte.
std::string without_graph_pictures(std::string html) {
  const std::string marker = "<p class=muted>graph (", box = "<div class=svgbox>", end = "</svg>";
  for (size_t at = html.find(marker); at != std::string::npos; at = html.find(marker, at)) {
    const size_t from = html.find(box, at) + box.size();
    const size_t to = html.find(end, from);
    if (from < box.size() || to == std::string::npos) break;
    html.replace(from, to + end.size() - from, "[graph]");
    at = from;
  }
  return html;
}

session::Run run(int id, const std::string& mode, const std::string& backend, double speedup) {
  session::Run r;
  r.id = id;
  r.mode = mode;
  r.backend = backend;
  r.device = "cuda:0";
  r.speedup_vs_eager = speedup;
  r.peak_memory_bytes = (id + 2) << 20;
  r.latency.median_ms = 1.0 / (speedup > 0 ? speedup : 1);
  return r;
}

session::TimelineEvent launch(int run, int64_t at, int64_t correlation) {
  auto e = test::timeline_event(run, "host/thread 1", "cuda_runtime", "cudaLaunchKernel", at, 2);
  e.correlation = correlation;
  return e;
}

session::TimelineEvent record(int run, const std::string& name, int64_t at, int64_t dur, int64_t correlation,
                              const std::string& kernel = "") {
  auto e = test::timeline_event(run, "cuda:0/stream 7", "kernel", name, at, dur, kernel);
  e.correlation = correlation;
  return e;
}

// What the reports read from a timeline, its odd corners included: launcher spans found through
// correlation ids (nested, starting together, of equal length, an extern call around a LibTorch op),
// records naming their kernel or nothing, a correlation id given twice and one never launched,
// negative and zero durations, CUDA graph replays, a run without events, import-wide events, memory
// lanes with a peak, instants, lanes that share start times, events out of time order.
session::Session launch_session() {
  session::Session s;
  s.origin = "kiln profile";
  s.model.path = "launches.pt";
  for (const char* name : {"k0", "k1"}) {
    session::Kernel k;
    k.name = name;
    k.compile_id = "[0/0]";
    k.nodes = {"relu"};
    s.kernels.push_back(k);
  }
  session::CompiledRegion region;
  region.compile_id = "[0/0]";
  region.region = 0;
  region.guards = {"x.size(0) == 8"};
  s.regions.push_back(region);
  s.runs = {run(0, "eager", "eager", 0), run(1, "default", "kiln", 1.5), run(2, "reduce-overhead", "kiln", 2.0),
            run(3, "max-autotune", "kiln", 0)};
  auto& t = s.timeline;
  t.push_back(test::timeline_event(-1, "compile", "compile", "[0/0]", 0, 900));
  for (int it = 0; it < 2; ++it) {
    const int64_t base = 10000 + 10000 * it;
    t.push_back(test::timeline_event(1, "host/thread 1", "iteration", "iteration", base, 9000));
    t.push_back(test::timeline_event(1, "host/thread 1", "region", "region 0", base + 10, 8000, "", "[0/0]"));
    t.push_back(test::timeline_event(1, "host/thread 1", "kernel", "k0", base + 100, 300, "k0", "[0/0]"));
    t.push_back(test::timeline_event(1, "host/thread 1", "kernel", "k1", base + 100, 300, "k1", "[0/0]"));  // ties k0
    t.push_back(launch(1, base + 150, 100 * it + 1));
    t.push_back(test::timeline_event(1, "host/thread 1", "extern", "aten::linear", base + 500, 900, "", "[0/0]"));
    t.push_back(test::timeline_event(1, "host/thread 1", "cpu_op", "aten::addmm", base + 550, 700));
    t.push_back(launch(1, base + 600, 100 * it + 2));
    t.push_back(launch(1, base + 610, 100 * it + 2));  // the same id again: the first counts
    t.push_back(test::timeline_event(1, "host/thread 1", "guard", "guards [0/0]", base + 2000, 40));
    t.push_back(test::timeline_event(1, "host/thread 1", "nvtx", "k0", base + 100, 300));
    t.push_back(test::timeline_event(1, "host/thread 1", "marker", "instant", base + 2100, 0));
    t.push_back(record(1, "void k0_kernel<float>(float*)", base + 700, 250, 100 * it + 1));
    t.push_back(record(1, "sgemm_128x64", base + 1200, 600, 100 * it + 2));
    t.push_back(record(1, "k1", base + 1900, 80, -1, "k1"));
    t.push_back(record(1, "orphan", base + 2000, 30, 999));  // launched by nothing recorded
    t.push_back(record(1, "negative", base + 2100, -5, 100 * it + 1));
    t.push_back(record(1, "zero", base + 2200, 0, 100 * it + 1));
  }
  t.push_back(test::timeline_event(1, "cuda:0/stream 7", "memcpy", "HtoD", 9000, 400));
  // Out of time order, on a second stream.
  t.push_back(record(1, "late", 30000, 100, -1));
  t.push_back(record(1, "early", 5000, 100, -1));
  for (int i = 0; i < 3; ++i) {
    auto e = test::timeline_event(1, "memory cuda:0", "memory", "allocated", 10000 + 3000 * i, 0);
    e.args_json = "{\"bytes\": " + std::to_string((i + 1) << 20) + "}";
    t.push_back(e);
  }
  for (const char* owner : {"buffer relu", "layout copy of w1", "layout copy of w2"}) {
    auto e = test::timeline_event(1, "memory cuda:0", "memory peak", owner, 16000, 0);
    e.args_json = "{\"bytes\": 1048576}";
    t.push_back(e);
  }
  // reduce-overhead: one graph launch, kernels with no launch call of their own.
  t.push_back(test::timeline_event(2, "host/thread 1", "iteration", "iteration", 40000, 3000));
  t.push_back(test::timeline_event(2, "host/thread 1", "cuda_runtime", "cudaGraphLaunch", 40010, 20));
  for (int i = 0; i < 3; ++i) t.push_back(record(2, i % 2 ? "k1" : "k0", 40100 + 100 * i, 90, -1));
  // eager: LibTorch ops launching cuBLAS.
  t.push_back(test::timeline_event(0, "host/thread 1", "cpu_op", "aten::mm", 50000, 500));
  t.push_back(launch(0, 50100, 7));
  t.push_back(record(0, "sgemm_128x64", 50300, 400, 7));
  auto e = test::timeline_event(0, "memory cuda:0", "memory", "allocated", 50000, 0);
  e.args_json = "{\"bytes\": 3145728}";
  t.push_back(e);
  return s;
}

// A run on the CPU: Kiln's kernel and extern spans are the kernel time.
session::Session cpu_session() {
  session::Session s;
  s.origin = "kiln profile";
  session::Kernel k;
  k.name = "k0";
  k.compile_id = "[0/0]";
  s.kernels.push_back(k);
  s.runs = {run(0, "eager", "eager", 0), run(1, "default", "kiln", 1.2)};
  for (int i = 0; i < 4; ++i) {
    s.timeline.push_back(test::timeline_event(1, "host", "kernel", "k0", 100 * i, 40, "k0", "[0/0]"));
    s.timeline.push_back(test::timeline_event(1, "host", "extern", "aten::mm", 100 * i + 50, 30, "", "[0/0]"));
    s.timeline.push_back(test::timeline_event(0, "host", "cpu_op", "aten::relu", 100 * i, 60));
  }
  return s;
}

// Every session the report tests compare, as files in a fresh folder.
std::vector<std::string> report_session_files() {
  const std::string dir = test::temp_dir();
  std::vector<std::string> out;
  std::vector<std::string> files = shipped_sessions();
  for (const auto& e : fs::directory_iterator(test::data("sessions")))
    if (e.path().extension() == ".kiln") files.push_back(e.path().string());
  for (const auto& f : files) {  // copies: opening one may write beside it
    out.push_back(dir + "/" + fs::path(f).filename().string());
    fs::copy_file(f, out.back());
  }
  const std::pair<std::string, session::Session> built[] = {{"launches", launch_session()}, {"cpu", cpu_session()}};
  for (const auto& [name, s] : built) {
    out.push_back(dir + "/" + name + ".kiln");
    session::save_session(out.back(), s);
  }
  for (const char* trace : {"traces/kineto_small_mlp.json", "traces/block_default.log", "tlparse/comp_metrics.log"}) {
    importers::ImportRequest request;
    request.paths = {test::data(trace)};
    auto imported = importers::import_files(request);
    out.push_back(dir + "/" + fs::path(trace).stem().string() + ".kiln");
    session::save_session(out.back(), imported.sessions.at(0).session);
  }
  return out;
}

}  // namespace

TEST(StreamedReports, HtmlMarkdownAndStatsFromTheFileAreThoseOfTheLoadedSession) {
  for (const auto& path : report_session_files()) {
    SCOPED_TRACE(path);
    const auto s = session::load_session(path);
    session::SessionFile rows(path);
    const std::string html = without_graph_pictures(report::render_html(s));
    EXPECT_EQ(first_difference(without_graph_pictures(report::render_html(rows)), html), "");
    std::string written;
    StringSink sink(written);
    report::write_html(rows, sink);
    EXPECT_EQ(first_difference(without_graph_pictures(written), html), "");
    EXPECT_EQ(first_difference(report::render_markdown(rows), report::render_markdown(s)), "");

    const int shown = report::report_run(s);
    EXPECT_EQ(report::report_run(rows), shown);
    std::vector<int> runs = {shown, -1};
    for (const auto& r : s.runs) runs.push_back(r.id);
    for (int run : runs) {
      SCOPED_TRACE("run " + std::to_string(run));
      const auto want = report::kernel_stats(s, run);
      const auto got = report::kernel_stats(rows, run);
      EXPECT_EQ(first_difference(report::render_kernel_stats_markdown(rows.summary(), got),
                                 report::render_kernel_stats_markdown(s, want)), "");
      EXPECT_EQ(first_difference(report::render_kernel_stats_json(rows.summary(), got),
                                 report::render_kernel_stats_json(s, want)), "");
      auto lanes = report::memory_lanes_of_run(rows, run), want_lanes = report::memory_lanes_of_run(s, run);
      ASSERT_EQ(lanes.size(), want_lanes.size());
      for (size_t i = 0; i < lanes.size(); ++i) {
        EXPECT_EQ(lanes[i].lane, want_lanes[i].lane);
        EXPECT_EQ(lanes[i].points, want_lanes[i].points);
        EXPECT_EQ(lanes[i].peak_bytes, want_lanes[i].peak_bytes);
        EXPECT_EQ(lanes[i].peak_ns, want_lanes[i].peak_ns);
        EXPECT_EQ(lanes[i].at_peak, want_lanes[i].at_peak);
      }
      const auto time = report::module_time(rows, run), want_time = report::module_time(s, run);
      EXPECT_EQ(time.total_ns, want_time.total_ns);
      EXPECT_EQ(time.records, want_time.records);
      EXPECT_EQ(time.iterations, want_time.iterations);
      ASSERT_EQ(time.modules.size(), want_time.modules.size());
      for (size_t i = 0; i < time.modules.size(); ++i) {
        EXPECT_EQ(time.modules[i].key, want_time.modules[i].key);
        EXPECT_EQ(time.modules[i].total_ns, want_time.modules[i].total_ns);
      }
      ASSERT_EQ(time.lines.size(), want_time.lines.size());
      for (size_t i = 0; i < time.lines.size(); ++i) {
        EXPECT_EQ(time.lines[i].key, want_time.lines[i].key);
        EXPECT_EQ(time.lines[i].total_ns, want_time.lines[i].total_ns);
      }
    }
  }
}

// The built session is read as it is meant: launchers found, replays named, memory and timelines drawn.
TEST(StreamedReports, TheBuiltSessionReachesEveryCorner) {
  const auto s = launch_session();
  const auto st = report::kernel_stats(s, 1);
  EXPECT_EQ(st.time_source, "device");
  EXPECT_EQ(st.iterations, 2);
  std::set<std::string> launchers;
  for (const auto& k : st.kernels) launchers.insert(k.launched_by + " (" + k.launcher + ")");
  EXPECT_TRUE(launchers.count("k0 (kiln kernel)") || launchers.count("k1 (kiln kernel)")) << st.kernels.size();
  EXPECT_TRUE(launchers.count("aten::addmm (op)"));
  EXPECT_TRUE(launchers.count(" ()")) << "the orphan";
  const auto replay = report::kernel_stats(s, 2);
  ASSERT_FALSE(replay.kernels.empty());
  EXPECT_EQ(replay.kernels[0].launcher, "CUDA graph replay");
  EXPECT_EQ(report::report_run(s), 2);
  EXPECT_EQ(report::kernel_stats(cpu_session(), 1).time_source, "host");
  const std::string html = report::render_html(s);
  EXPECT_NE(html.find("Timeline: default / kiln"), std::string::npos);
  EXPECT_EQ(html.find("Timeline: max-autotune"), std::string::npos) << "a run without events draws nothing";
  EXPECT_NE(html.find("Memory at the peak"), std::string::npos);
  EXPECT_NE(html.find("layout copies of 2 weights"), std::string::npos);
}

// The regions and kernels read once into memory beside a session's rows; the timeline never is.
TEST(StreamedReports, CodeInMemoryHoldsEverythingButTheTimeline) {
  const auto s = launch_session();
  session::SessionInMemory rows(s);
  session::SessionCodeInMemory code(rows);
  const auto& held = code.summary();
  EXPECT_TRUE(held.timeline.empty());
  ASSERT_EQ(held.regions.size(), s.regions.size());
  ASSERT_EQ(held.kernels.size(), s.kernels.size());
  EXPECT_EQ(held.kernels[1].name, "k1");
  EXPECT_EQ(held.runs.size(), s.runs.size());
  EXPECT_EQ(held.origin, s.origin);
  EXPECT_EQ(held.model.path, s.model.path);
  size_t events = 0, memory = 0;
  code.each_event(std::nullopt, false, [&](const session::TimelineEvent&) { ++events; });
  code.each_event(1, true, [&](const session::TimelineEvent&) { ++memory; });
  EXPECT_EQ(events, s.timeline.size());
  EXPECT_EQ(memory, 6u);
  EXPECT_TRUE(code.has_events(2));
  EXPECT_FALSE(code.has_events(3));
  EXPECT_EQ(code.earliest_start(1), 5000);
  EXPECT_EQ(report::render_markdown(code), report::render_markdown(s));
}

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
