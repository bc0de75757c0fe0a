// The Kineto / Chrome-trace importer: the scanner that streams events out of the document, and the
// profiler sample (eager and compiled MLP on an H100) with its runs, links and compile markers.
#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/base/error.h"
#include "engine/importers/common/json_doc.h"
#include "engine/importers/kineto/chrome_trace_scanner.h"
#include "engine/importers/kineto/kineto.h"
#include "engine/report/render_json.h"
#include "tests/support/paths.h"

using namespace kiln;  // NOLINT
using importers::import_kineto_trace;

namespace {

std::vector<std::string> scan(const std::string& doc, size_t piece, std::string* header = nullptr,
                              bool* complete = nullptr) {
  std::vector<std::string> events;
  importers::ChromeTraceScanner s([&](std::string_view e) { events.emplace_back(e); });
  for (size_t at = 0; at < doc.size(); at += piece) s.feed(std::string_view(doc).substr(at, piece));
  s.finish();
  if (header) *header = s.header();
  if (complete) *complete = s.complete();
  return events;
}

const session::TimelineEvent* find_event(const session::Session& s, const std::string& category, int64_t correlation) {
  for (const auto& e : s.timeline)
    if (e.category == category && e.correlation == correlation) return &e;
  return nullptr;
}

// A kernel event's args name the API that launched it and the CPU op it ran for.
void expect_launched_by(const session::TimelineEvent& k, const std::string& api, const std::string& cpu_op) {
  auto args = nlohmann::json::parse(k.args_json);
  EXPECT_EQ(args["launch"], api);
  EXPECT_EQ(args["cpu_op"], cpu_op);
}

}  // namespace

TEST(ChromeTraceScanner, EventsAndHeaderAtEveryChunkSize) {
  std::string doc = R"({"schemaVersion": 1, "deviceProperties": [{"name": "G]{"}],
    "note": "a \"traceEvents\": [ {x} ]",
    "traceEvents": [ {"name": "a", "args": {"s": "}]\\\"{["}}, 7, {"name": "b", "args": {"nested": {"k": [1, {"z": 2}]}}} ],
    "baseTimeNanoseconds": 5})";
  for (size_t piece = 1; piece <= doc.size(); ++piece) {
    std::string header;
    bool complete = false;
    auto events = scan(doc, piece, &header, &complete);
    ASSERT_EQ(events.size(), 2u) << piece;
    EXPECT_EQ(events[0], R"({"name": "a", "args": {"s": "}]\\\"{["}})");
    EXPECT_EQ(events[1], R"({"name": "b", "args": {"nested": {"k": [1, {"z": 2}]}}})");
    EXPECT_TRUE(complete);
    auto h = nlohmann::json::parse(header);
    EXPECT_EQ(h["baseTimeNanoseconds"], 5);
    EXPECT_EQ(h["traceEvents"].size(), 0u);
    EXPECT_EQ(h["deviceProperties"][0]["name"], "G]{");
  }
}

// Bytes before the document (junk, a cut-off start) are never part of the header, wherever the
// chunks break: the header (and the note quoting an unreadable one) depends on the input alone.
TEST(ChromeTraceScanner, TheHeaderStartsWithTheDocumentAtEveryChunkSize) {
  std::string doc = R"( junk: 1, x: 2 {"deviceProperties": [], "traceEvents": [{"name": "a"}], "baseTimeNanoseconds": 5})";
  std::string whole;
  scan(doc, doc.size(), &whole);
  EXPECT_EQ(whole.rfind("{\"deviceProperties\"", 0), 0u) << whole;
  for (size_t piece = 1; piece < doc.size(); ++piece) {
    std::string header;
    scan(doc, piece, &header);
    EXPECT_EQ(header, whole) << piece;
  }
}

// An event longer than the scanner may keep is skipped and counted; the events around it are delivered
// at every chunk size.
TEST(ChromeTraceScanner, AnOversizedEventIsSkippedAndCounted) {
  std::string doc = R"({"traceEvents": [{"name": "a"}, {"name": "huge", "args": {"s": ")" + std::string(5000, 'h') +
                    R"("}}, {"name": "b"}]})";
  for (size_t piece : {size_t(7), size_t(100), size_t(4096), doc.size()}) {
    std::vector<std::string> events;
    importers::ChromeTraceScanner s([&](std::string_view e) { events.emplace_back(e); }, 64 << 20, 1000);
    for (size_t at = 0; at < doc.size(); at += piece) s.feed(std::string_view(doc).substr(at, piece));
    s.finish();
    ASSERT_EQ(events.size(), 2u) << piece;
    EXPECT_EQ(events[0], R"({"name": "a"})");
    EXPECT_EQ(events[1], R"({"name": "b"})");
    EXPECT_EQ(s.oversized_events(), 1) << piece;
    EXPECT_TRUE(s.complete());
  }
}

TEST(ChromeTraceScanner, BareArrayAndCutDocuments) {
  std::string header;
  bool complete = false;
  auto events = scan(R"([{"ph": "X"}, {"ph": "i"}])", 3, &header, &complete);
  EXPECT_EQ(events.size(), 2u);
  EXPECT_TRUE(complete);
  EXPECT_EQ(nlohmann::json::parse(header)["traceEvents"].size(), 0u);
  events = scan(R"({"traceEvents": [{"ph": "X"}, {"ph": "i", "args": {"a": )", 5, &header, &complete);
  EXPECT_EQ(events.size(), 1u);
  EXPECT_FALSE(complete);
}

TEST(Kineto, SampleRunsKernelsAndLinks) {
  importers::KinetoFacts facts;
  auto s = import_kineto_trace(test::data("traces/kineto_small_mlp.json"), &facts);
  EXPECT_EQ(s.origin, "profiler trace import");
  EXPECT_EQ(facts.pid, 1034);
  EXPECT_EQ(s.env.gpu, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(s.env.cuda, "13.0");
  EXPECT_TRUE(s.import_notes.empty()) << s.import_notes.front().what;

  ASSERT_EQ(s.runs.size(), 1u);  // no ProfilerStep: one run for the whole window
  const auto& run = s.runs[0];
  EXPECT_EQ(run.id, 0);
  EXPECT_EQ(run.mode, "imported");
  EXPECT_EQ(run.backend, "torch.compile");
  EXPECT_EQ(run.device, "cuda:0");
  EXPECT_EQ(run.kernels_per_iter, 42);
  EXPECT_GT(run.gpu_busy, 0.0);
  EXPECT_LT(run.gpu_busy, 0.2);
  EXPECT_NEAR(run.host_overhead_ms, (51.307 + 13.036 + 11.009) / 1000.0, 1e-6);  // three cache lookups
  for (const auto& e : s.timeline) EXPECT_EQ(e.run, 0);

  // A cuBLAS kernel: correlation 20 ↔ cudaLaunchKernel; External id 5 ↔ aten::addmm.
  const auto* k = find_event(s, "kernel", 20);
  ASSERT_TRUE(k);
  EXPECT_EQ(k->lane, "cuda:0/stream 7");
  EXPECT_EQ(k->start_ns, 1790857026000000000 + 4477225967572761);
  EXPECT_EQ(k->dur_ns, 1153);
  expect_launched_by(*k, "cudaLaunchKernel", "aten::addmm");
  auto args = nlohmann::json::parse(k->args_json);
  EXPECT_EQ(args["External id"], 5);
  EXPECT_EQ(args["grid"], nlohmann::json::array({2, 8, 1}));
  const auto* launch = find_event(s, "cuda_runtime", 20);
  ASSERT_TRUE(launch);
  EXPECT_EQ(launch->name, "cudaLaunchKernel");
  EXPECT_EQ(launch->lane, "host:1034");

  // A Triton kernel of the compiled region, launched through the driver API.
  const auto* t = find_event(s, "kernel", 323);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->name, "triton_poi_fused_addmm_relu_0");
  EXPECT_EQ(t->kernel, "triton_poi_fused_addmm_relu_0");
  expect_launched_by(*t, "cuLaunchKernel", "triton_poi_fused_addmm_relu_0");

  int regions = 0, guards = 0, graphs = 0, gpu = 0;
  for (const auto& e : s.timeline) {
    regions += e.category == "region";
    guards += e.category == "guard";
    graphs += e.category == "compiled_graph";
    gpu += e.lane.rfind("cuda:", 0) == 0;
    if (e.category == "region") EXPECT_EQ(e.compile_id, "[0/0]");
  }
  EXPECT_EQ(regions, 3);
  EXPECT_EQ(guards, 3);
  EXPECT_EQ(graphs, 3);
  EXPECT_EQ(gpu, 45);  // 42 kernels + 3 memsets
  ASSERT_EQ(s.regions.size(), 1u);
  EXPECT_EQ(s.regions[0].compile_id, "[0/0]");
  EXPECT_EQ(s.regions[0].hits, 3);
  ASSERT_EQ(s.kernels.size(), 2u);
  EXPECT_EQ(s.kernels[0].name, "triton_poi_fused_addmm_relu_0");
  EXPECT_EQ(s.kernels[0].language, "triton");
  EXPECT_EQ(s.kernels[0].launch_config, "grid [256,1,1] block [128,1,1]");
  EXPECT_EQ(s.kernels[0].registers, 16);
}

TEST(Kineto, GzipAndFlowRecoveredCorrelations) {
  auto doc = nlohmann::json::parse(test::read_file(test::data("traces/kineto_small_mlp.json")));
  for (auto& e : doc["traceEvents"])
    if (e.value("cat", "") == "kernel") e["args"].erase("correlation");  // only the ac2g flows link them now
  std::string path = test::temp_dir() + "/flows.json.gz";
  std::string text = doc.dump();
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
  gzclose(f);
  auto s = import_kineto_trace(path);
  const auto* k = find_event(s, "kernel", 323);
  ASSERT_TRUE(k);
  EXPECT_EQ(k->name, "triton_poi_fused_addmm_relu_0");
  EXPECT_EQ(nlohmann::json::parse(k->args_json)["launch"], "cuLaunchKernel");
  int linked = 0;
  for (const auto& e : s.timeline) linked += e.category == "kernel" && e.correlation >= 0;
  EXPECT_EQ(linked, 42);
}

TEST(Kineto, ProfilerStepsBecomeRuns) {
  auto ev = [](const std::string& fields) { return "{" + fields + "}"; };
  std::string trace = "{\"baseTimeNanoseconds\": 1000000000, \"distributedInfo\": {\"rank\": 2}, \"traceEvents\": [";
  std::vector<std::string> events = {
      ev(R"("ph": "X", "cat": "user_annotation", "name": "ProfilerStep#0", "pid": 7, "tid": 7, "ts": 100, "dur": 100)"),
      ev(R"("ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 7, "tid": 7, "ts": 200, "dur": 100)"),
      ev(R"("ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 7, "tid": 7, "ts": 110, "dur": 10, "args": {"External id": 1})"),
      ev(R"("ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 7, "tid": 7, "ts": 112, "dur": 5, "args": {"External id": 1, "correlation": 9})"),
      ev(R"("ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 250, "dur": 20, "args": {"device": 0, "stream": 7, "correlation": 9, "External id": 1})"),
      ev(R"("ph": "B", "cat": "cpu_op", "name": "aten::add", "pid": 7, "tid": 7, "ts": 210)"),
      ev(R"("ph": "E", "cat": "cpu_op", "name": "aten::add", "pid": 7, "tid": 7, "ts": 230)"),
      ev(R"("ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 7, "tid": 7, "ts": 215, "args": {"Total Allocated": 4096})"),
      ev(R"("ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD", "pid": 0, "tid": 7, "ts": 280, "dur": 10, "args": {"device": 0, "stream": 7})"),
      ev(R"("ph": "Q", "name": "odd")"),
  };
  for (size_t i = 0; i < events.size(); ++i) trace += (i ? ",\n" : "") + events[i];
  trace += "]}";
  auto s = import_kineto_trace(test::write_temp_file("steps.json", trace));
  EXPECT_EQ(s.rank, 2);
  ASSERT_EQ(s.runs.size(), 2u);
  EXPECT_EQ(s.runs[0].mode, "ProfilerStep#0");
  EXPECT_EQ(s.runs[1].mode, "ProfilerStep#1");
  EXPECT_NEAR(s.runs[0].latency.median_ms, 0.1, 1e-9);
  // The kernel ran during step 1 but was launched in step 0: it counts for step 0.
  EXPECT_EQ(s.runs[0].kernels_per_iter, 1);
  EXPECT_EQ(s.runs[1].kernels_per_iter, 0);
  EXPECT_EQ(s.runs[1].peak_memory_bytes, 4096);
  for (const auto& e : s.timeline) {
    if (e.name == "aten::add") {
      EXPECT_EQ(e.dur_ns, 20000);
      EXPECT_EQ(e.run, 1);
      EXPECT_EQ(e.start_ns, 1000000000 + 210000);
    }
    if (e.name == "gemm") EXPECT_EQ(e.run, 0);
    if (e.name == "Memcpy HtoD") EXPECT_EQ(e.category, "memcpy");
  }
  ASSERT_EQ(s.import_notes.size(), 1u);
  EXPECT_EQ(s.import_notes[0].what, "unsupported event phase 'Q'");
}

TEST(Kineto, NotATraceIsAnErrorNamingTheFile) {
  std::string path = test::write_temp_file("empty.json", "   ");
  try {
    import_kineto_trace(path);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos);
  }
}

namespace {

// The whole session as text (report::render_json: every field, in a fixed order), its creation
// time left out: two imports of one file are the same when their texts are equal.
std::string session_text(session::Session s) {
  s.env.created_at.clear();
  return report::render_json(s);
}

}  // namespace

// A large trace is read by several threads, each from its part (each part after the first from an
// element boundary guessed in the file). Wherever the boundaries fall — inside a string holding
// "}, {", inside an event whose args hold an array of objects, between a span's begin and its end,
// before the header's tail — the session is the one a single thread reads.
TEST(Kineto, SeveralThreadsReadTheSameSessionAsOneWhereverThePartsFall) {
  auto doc = nlohmann::json::parse(test::read_file(test::data("traces/kineto_small_mlp.json")));
  std::vector<std::string> events;
  for (const auto& e : doc["traceEvents"]) events.push_back(e.dump(2));
  // Spans begun in one half and ended in the other, nested; an end nothing began; an event the
  // fast reader leaves to the JSON parser (an escape); decoys for the boundary guess.
  const std::string host = R"("pid": 77, "tid": 77)";
  std::vector<std::string> extra = {
      "{\"ph\": \"B\", \"cat\": \"cpu_op\", \"name\": \"outer\", " + host + ", \"ts\": 10}",
      "{\"ph\": \"B\", \"cat\": \"cpu_op\", \"name\": \"inner\", " + host + ", \"ts\": 11}",
      "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"odd }, { name\", " + host + ", \"ts\": 12, \"dur\": 1}",
      "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"objs\", " + host +
          ", \"ts\": 13, \"dur\": 1, \"args\": {\"list\": [{\"a\": 1}, {\"b\": 2}, {\"c\": [{\"d\": 3}]}]}}",
      "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"esc\\\"aped\", " + host + ", \"ts\": 14, \"dur\": 1}",
      "{\"ph\": \"E\", \"cat\": \"cpu_op\", \"name\": \"inner\", " + host + ", \"ts\": 20}",
      "{\"ph\": \"E\", \"cat\": \"cpu_op\", \"name\": \"outer\", " + host + ", \"ts\": 30}",
      "{\"ph\": \"E\", \"cat\": \"cpu_op\", \"name\": \"stray\", " + host + ", \"ts\": 31}",
      "{\"ph\": \"Q\", \"name\": \"odd phase\"}",
  };
  // Spread the extras through the sample's events.
  std::vector<std::string> all;
  size_t step = std::max<size_t>(1, events.size() / (extra.size() + 1));
  for (size_t i = 0, x = 0; i < events.size(); ++i) {
    all.push_back(events[i]);
    if ((i + 1) % step == 0 && x < extra.size()) all.push_back(extra[x++]);
  }
  std::map<int, int> split_runs;  // parts wanted → imports read in that many parts
  for (int pad = 0; pad < 40; ++pad) {
    std::string trace = "{\"schemaVersion\": 1, \"pad\": \"" + std::string(static_cast<size_t>(pad) * 97, 'x') +
                        "\", \"traceEvents\": [\n";
    for (size_t i = 0; i < all.size(); ++i) trace += (i ? ",\n  " : "  ") + all[i];
    trace += "\n], \"deviceProperties\": " + doc["deviceProperties"].dump() +
             ", \"baseTimeNanoseconds\": " + std::to_string(doc.value("baseTimeNanoseconds", int64_t(0))) +
             ", \"distributedInfo\": {\"rank\": 3}}";
    // Shift the middle through the events: each padding moves it by 97 / 2 bytes.
    std::string path = test::write_temp_file("split.json", trace);
    importers::KinetoFacts one_facts;
    auto one = import_kineto_trace(path, &one_facts, 0);
    EXPECT_EQ(one_facts.parts, 1);
    const std::string one_text = session_text(one);
    // Two parts, and more threads than the machine has cores (each part checks the next one's start).
    for (int wanted : {2, 3, 5}) {
      importers::KinetoFacts facts;
      auto split = import_kineto_trace(path, &facts, 1, wanted);
      EXPECT_TRUE(facts.parts == 1 || facts.parts == wanted) << "pad " << pad << ", " << wanted << " parts";
      split_runs[wanted] += facts.parts == wanted;
      EXPECT_EQ(one_facts.events, facts.events) << "pad " << pad << ", " << wanted << " parts";
      EXPECT_EQ(one_facts.bytes, facts.bytes) << "pad " << pad << ", " << wanted << " parts";
      EXPECT_EQ(one_text, session_text(split)) << "pad " << pad << ", " << wanted << " parts";
      EXPECT_EQ(split.rank, 3);
    }
  }
  // The guesses land on real boundaries most of the time (when one does not, one thread reads on).
  EXPECT_GT(split_runs[2], 20);
  EXPECT_GT(split_runs[3], 10);
  EXPECT_GT(split_runs[5], 5);
}

// While the later parts are read, the first thread makes room for their events after its own, as many
// as its part's events per byte foretell; when the later parts hold far more events per byte (the room
// is too small: the rest is appended) or far fewer (the room left over is given back), the session is
// still the one a single thread reads.
TEST(Kineto, LaterPartsEventsFitTheRoomMadeForThemOrNot) {
  auto event = [](int i, size_t args_bytes) {
    return "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"op" + std::to_string(i) +
           "\", \"pid\": 7, \"tid\": 7, \"ts\": " + std::to_string(1000 + i * 10) +
           ", \"dur\": 5, \"args\": {\"External id\": " + std::to_string(i) + ", \"text\": \"" +
           std::string(args_bytes, 'a' + static_cast<char>(i % 26)) + "\"}}";
  };
  for (bool dense_first : {false, true}) {
    // 300 KB of few large events and 300 KB of many small ones (200 bytes: the first thread keeps room
    // for one event per 250 bytes of the whole file, so some is left after the small ones), in
    // either order.
    std::vector<std::string> few, many;
    for (int i = 0; i < 15; ++i) few.push_back(event(i, 20000));
    for (int i = 15; i < 1515; ++i) many.push_back(event(i, 100));
    std::vector<std::string> all = dense_first ? many : few;
    for (auto& e : dense_first ? few : many) all.push_back(e);
    std::string trace = "{\"schemaVersion\": 1, \"traceEvents\": [\n";
    for (size_t i = 0; i < all.size(); ++i) trace += (i ? ",\n" : "") + all[i];
    trace += "\n]}";
    const std::string path = test::write_temp_file(dense_first ? "dense_first.json" : "sparse_first.json", trace);
    const std::string one = session_text(import_kineto_trace(path, nullptr, 0));
    importers::KinetoFacts facts;
    const std::string two = session_text(import_kineto_trace(path, &facts, 1, 2));
    EXPECT_EQ(facts.parts, 2) << (dense_first ? "dense first" : "sparse first");
    EXPECT_EQ(facts.events, 1515);
    EXPECT_EQ(one, two) << (dense_first ? "dense first" : "sparse first");
  }
}

// The inputs the importer's fuzzer found (tests/data/fuzz-regressions/kineto/) read the same with one
// thread, with two and with four.
TEST(Kineto, FuzzerInputsReadTheSameWithOneThreadAndWithSeveral) {
  auto text_of = [](const std::string& path, int64_t split, int parts) {
    try {
      return session_text(import_kineto_trace(path, nullptr, split, parts));
    } catch (const Error& e) {
      return std::string("error: ") + e.what();
    }
  };
  int n = 0;
  for (const auto& f : std::filesystem::directory_iterator(test::data("fuzz-regressions/kineto"))) {
    const std::string one = text_of(f.path().string(), 0, 0);
    EXPECT_EQ(one, text_of(f.path().string(), 1, 2)) << f.path();
    EXPECT_EQ(one, text_of(f.path().string(), 1, 4)) << f.path();
    ++n;
  }
  EXPECT_GE(n, 2);
}

// With a whole-event reader, the events it takes and those left to on_event are together the
// scanner's events, in order, at every chunk size; the header and the counts are unchanged; an event
// longer than the limit is never offered whole, so it is skipped and counted as before.
TEST(ChromeTraceScanner, AWholeEventReaderTakesEventsTheScannerWouldDeliver) {
  std::string doc = R"({"schemaVersion": 1, "traceEvents": [ {"name": "a", "args": {"s": "}]\\\"{["}}, 7,
    {"name": "b", "args": {"nested": {"k": [1, {"z": 2}]}}}, {"name": "huge", "s": ")" +
                    std::string(300, 'h') + R"("}, {"name": "c"} ], "baseTimeNanoseconds": 5})";
  std::string plain_header;
  auto plain = scan(doc, doc.size(), &plain_header);
  for (size_t piece = 1; piece <= doc.size(); ++piece) {
    for (bool take_some : {false, true}) {
      std::vector<std::string> events;
      int taken = 0;
      importers::ChromeTraceScanner s([&](std::string_view e) { events.emplace_back(e); }, 64 << 20, 200);
      s.set_whole_event_reader([&](std::string_view rest) -> size_t {
        EXPECT_LE(rest.size(), 200u);
        // The event's length when it is whole in `rest`.
        bool in_string = false, escape = false;
        int depth = 0;
        for (size_t i = 0; i < rest.size(); ++i) {
          const char c = rest[i];
          if (in_string) {
            if (escape) escape = false;
            else if (c == '\\') escape = true;
            else if (c == '"') in_string = false;
          } else if (c == '"') {
            in_string = true;
          } else if (c == '{') {
            ++depth;
          } else if (c == '}' && --depth == 0) {
            if (take_some && rest.substr(0, i + 1).find("\"b\"") != std::string_view::npos) return 0;
            events.emplace_back(rest.substr(0, i + 1));
            ++taken;
            return i + 1;
          }
        }
        return 0;
      });
      for (size_t at = 0; at < doc.size(); at += piece) s.feed(std::string_view(doc).substr(at, piece));
      s.finish();
      std::vector<std::string> expected;
      for (const auto& e : plain)
        if (e.find("huge") == std::string::npos) expected.push_back(e);
      ASSERT_EQ(events, expected) << "piece " << piece;
      EXPECT_EQ(s.header(), plain_header) << piece;
      EXPECT_EQ(s.events(), 4) << piece;
      EXPECT_EQ(s.oversized_events(), 1) << piece;
      EXPECT_TRUE(s.complete()) << piece;
      if (piece == doc.size()) EXPECT_EQ(taken, take_some ? 2 : 3);
    }
  }
}

// The two readers of an event — ChromeEvent in place, and the JSON parser for what it leaves (here
// every event, each given a root member with an escape) — make the same session of the profiler
// sample and of events with repeated, misplaced and odd-typed members.
TEST(Kineto, EventsReadInPlaceAndByTheJsonParserMakeTheSameSession) {
  auto doc = nlohmann::json::parse(test::read_file(test::data("traces/kineto_small_mlp.json")));
  std::vector<std::string> events;
  for (const auto& e : doc["traceEvents"]) events.push_back(e.dump());
  events.push_back(R"({"ph": "X", "cat": "kernel", "name": "k", "name": "second", "pid": 0, "tid": 7, "ts": 5,
                      "dur": 2, "args": {"device": 0, "stream": 9, "stream": 3, "correlation": 11, "grid": [1, 2, 3]}})");
  events.push_back(R"({"ph": "X", "cat": "cpu_op", "name": "typed", "pid": "p", "tid": [1], "ts": "late", "dur": null,
                      "args": {"External id": "x", "correlation": 2.5}})");
  events.push_back(R"({"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": 6, "args": {"Total Allocated": 4096}})");
  events.push_back(R"({"ph": "X", "cat": "cpu_op", "name": "args not an object", "pid": 1, "tid": 1, "ts": 7,
                      "dur": 1, "args": [{"correlation": 1}]})");
  events.push_back(R"({"ph": "s", "cat": "ac2g", "name": "ac2g", "id": 11, "pid": 1, "tid": 1, "ts": 4})");
  auto trace_of = [&](bool escape) {
    std::string trace = R"({"schemaVersion": 1, "baseTimeNanoseconds": 1000, "traceEvents": [)";
    for (size_t i = 0; i < events.size(); ++i) {
      std::string e = events[i];
      if (escape) e.insert(1, R"("note": "a\"b", )");
      trace += (i ? ",\n" : "\n") + e;
    }
    return trace + "]}";
  };
  // One file for both: the session names the file it came from.
  const std::string path = test::temp_dir() + "/two_readers.json";
  auto import_text = [&](const std::string& text) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
    return session_text(import_kineto_trace(path));
  };
  const std::string in_place = import_text(trace_of(false));
  const std::string parsed = import_text(trace_of(true));
  // Of a repeated member the first counts (both backends look up the first; how an object holding a
  // repeated key is dumped differs between them, so the text is compared under simdjson only).
  if (importers::json_backend_is_simdjson()) EXPECT_EQ(in_place.find("second"), std::string::npos);
  ASSERT_EQ(in_place.size(), parsed.size());
  EXPECT_TRUE(in_place == parsed);
}
