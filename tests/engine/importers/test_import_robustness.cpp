// Fuzz-style robustness of both importers: files cut at many points, corrupted JSON, wrong MD5s,
// unknown event types, a huge single line, garbage. Never a crash, never an exception past opening
// the file, and whatever was skipped is counted.
#include <gtest/gtest.h>
#include <zlib.h>

#include <fstream>
#include <unistd.h>
#include <random>
#include <set>

#include "engine/importers/kineto/kineto.h"
#include "engine/importers/torch_trace/torch_trace.h"
#include "tests/engine/importers/torch_trace/trace_text.h"
#include "tests/support/paths.h"

using namespace kiln;  // NOLINT
using importers::import_kineto_trace;
using importers::import_torch_trace;

namespace {

std::string write_text(const std::string& dir, const std::string& name, const std::string& text) {
  std::string path = dir + "/" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

int64_t note_count(const session::Session& s, const std::string& what_prefix) {
  int64_t n = 0;
  for (const auto& note : s.import_notes)
    if (note.what.rfind(what_prefix, 0) == 0) n += note.count;
  return n;
}

int64_t note_exact(const session::Session& s, const std::string& what) {
  int64_t n = 0;
  for (const auto& note : s.import_notes)
    if (note.what == what) n += note.count;
  return n;
}

size_t graph_count(const session::Session& s) {
  size_t n = 0;
  for (const auto& r : s.regions) n += r.graphs.size();
  return n;
}

const std::set<std::string> kCutNotes = {"corrupt JSON", "payload MD5 mismatch", "unfinished compile span", "unknown line",
                                         "corrupt JSON payload (chromium_event)", "corrupt JSON payload (dynamo_guards)",
                                         "compressed stream cut short"};

}  // namespace

TEST(ImportRobustness, TorchTraceCutAtManyPoints) {
  std::string text = test::read_file(test::data("tlparse/simple.log"));
  std::string dir = test::temp_dir();
  size_t last_regions = 0, last_graphs = 0, last_kernels = 0, last_timeline = 0;
  int at_line_ends = 0;
  for (size_t cut = 0; cut <= text.size(); cut += 997) {
    SCOPED_TRACE("cut at " + std::to_string(cut));
    std::string path = write_text(dir, "cut.log", text.substr(0, cut));
    session::Session s;
    ASSERT_NO_THROW(s = import_torch_trace(path));
    for (const auto& n : s.import_notes) EXPECT_TRUE(kCutNotes.count(n.what)) << n.what;
    EXPECT_LE(note_exact(s, "payload MD5 mismatch"), 1);  // only the record at the cut
    EXPECT_LE(note_exact(s, "corrupt JSON") + note_exact(s, "unknown line"), 1);  // only a header cut mid-line
    // A longer prefix never loses anything a shorter one had.
    EXPECT_GE(s.regions.size(), last_regions);
    EXPECT_GE(graph_count(s), last_graphs);
    EXPECT_GE(s.kernels.size() + 1, last_kernels);  // the cut output code may still be growing
    EXPECT_GE(s.timeline.size() + 1, last_timeline);
    last_regions = s.regions.size();
    last_graphs = graph_count(s);
    last_kernels = s.kernels.size();
    last_timeline = s.timeline.size();
    if (cut > 0 && text[cut - 1] == '\n') {
      ++at_line_ends;
      EXPECT_EQ(note_exact(s, "corrupt JSON"), 0);
      EXPECT_EQ(note_exact(s, "unknown line"), 0);
    }
  }
  auto whole = import_torch_trace(test::data("tlparse/simple.log"));
  EXPECT_EQ(last_regions, whole.regions.size());
  // Cut at every line end: the records before the cut are all there.
  std::string prefix;
  int64_t headers = 0, cuts = 0;
  for (size_t at = 0; at < text.size() && cuts < 400; at = text.find('\n', at) + 1) {
    prefix = text.substr(0, at);
    if (at > 0 && text[at] != '\t') {  // the next line starts a record: everything before is complete
      importers::TraceFacts facts;
      auto s = import_torch_trace(write_text(dir, "lines.log", prefix), {}, &facts);
      EXPECT_EQ(facts.records, headers);
      EXPECT_TRUE(s.import_notes.empty() || note_count(s, "unfinished compile span") == note_count(s, ""));
      ++cuts;
    }
    if (text[at] != '\t') ++headers;
    if (text.find('\n', at) == std::string::npos) break;
  }
  EXPECT_GT(cuts, 60);
}

TEST(ImportRobustness, TorchTraceGzipCut) {
  std::string text = test::read_file(test::data("traces/breaky_dynamic.log"));
  std::string dir = test::temp_dir();
  std::string gz = dir + "/t.log.gz";
  gzFile f = gzopen(gz.c_str(), "wb");
  gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
  gzclose(f);
  auto whole = import_torch_trace(gz);
  EXPECT_EQ(whole.regions.size(), 8u);
  EXPECT_TRUE(whole.import_notes.empty());
  std::string bytes = test::read_file(gz);
  auto cut = import_torch_trace(write_text(dir, "cut.log.gz", bytes.substr(0, bytes.size() / 3)));
  EXPECT_EQ(note_count(cut, "compressed stream cut short"), 1);
  EXPECT_GE(cut.regions.size(), 1u);
}

TEST(ImportRobustness, TorchTraceCorruptedBytes) {
  std::string text = test::read_file(test::data("traces/breaky_dynamic.log"));
  std::string dir = test::temp_dir();
  std::mt19937 rng(7);
  for (int round = 0; round < 12; ++round) {
    std::string bad = text;
    for (int i = 0; i < 40; ++i) {
      size_t at = rng() % bad.size();
      const char junk[] = {'{', '}', '"', '\n', '\t', '\\', 'x', '\0', '\xff', ':'};
      bad[at] = junk[rng() % sizeof junk];
    }
    SCOPED_TRACE("round " + std::to_string(round));
    session::Session s;
    ASSERT_NO_THROW(s = import_torch_trace(write_text(dir, "bad.log", bad)));
    EXPECT_GT(s.import_notes.size(), 0u);
    EXPECT_GE(s.regions.size(), 6u);
  }
}

TEST(ImportRobustness, WrongMd5KeepsTheRecordAndCountsIt) {
  test::TraceText log;
  log.record("\"dynamo_output_graph\": {}", test::TraceText::ctx(0, 0), "graph text");
  std::string text = log.text;
  text.replace(text.find("\tgraph text"), 11, "\tgraph TEXT");
  auto s = import_torch_trace(write_text(test::temp_dir(), "md5.log", text));
  EXPECT_EQ(note_count(s, "payload MD5 mismatch"), 1);
  ASSERT_EQ(s.regions.size(), 1u);
  EXPECT_EQ(s.regions[0].graphs[0].text, "graph TEXT");
  importers::TorchTraceOptions no_check;
  no_check.verify_md5 = false;
  EXPECT_TRUE(import_torch_trace(write_text(test::temp_dir(), "md5.log", text), no_check).import_notes.empty());
}

TEST(ImportRobustness, UnknownEventTypesAreKeptGenerically) {
  test::TraceText log;
  log.record("\"future_event\": {\"answer\": 42}", test::TraceText::ctx(3, 1, 2), "payload of the future");
  log.record("\"future_event\": {\"answer\": 43}", test::TraceText::ctx(3, 1));
  log.record("\"describe_tensor\": {\"id\": 0, \"ndim\": 2}", test::TraceText::ctx(3, 1));
  log.record("\"link\": {\"name\": \"docs\", \"url\": \"https://example.org\"}");
  auto s = import_torch_trace(write_text(test::temp_dir(), "future.log", log.text));
  ASSERT_EQ(s.import_notes.size(), 1u);
  EXPECT_EQ(s.import_notes[0].what, "unrecognized event type 'future_event' (kept as a generic record)");
  EXPECT_EQ(s.import_notes[0].count, 2);
  ASSERT_EQ(s.regions.size(), 1u);
  EXPECT_EQ(s.regions[0].compile_id, "[3/1]");
  ASSERT_EQ(s.regions[0].graphs.size(), 1u);
  EXPECT_EQ(s.regions[0].graphs[0].stage, "future_event");
  EXPECT_EQ(s.regions[0].graphs[0].text, "payload of the future");
  std::vector<std::string> messages;
  for (const auto& e : s.events) messages.push_back(e.compile_id + " " + e.message);
  EXPECT_EQ(messages, (std::vector<std::string>{"[3/1] future_event {\"answer\":42}", "[3/1] future_event {\"answer\":43}",
                                                "[3/1] describe_tensor {\"id\":0,\"ndim\":2}",
                                                " link {\"name\":\"docs\",\"url\":\"https://example.org\"}"}));
}

TEST(ImportRobustness, HugeSingleLines) {
  std::string dir = test::temp_dir();
  std::string huge(50 << 20, 'a');
  test::TraceText log;
  log.record("\"inductor_output_code\": {\"filename\": \"big.py\"}", test::TraceText::ctx(0, 0), "# " + huge);
  log.text += huge + "\n";  // a 50 MB line that is no record at all
  log.record("\"dynamo_output_graph\": {}", test::TraceText::ctx(0, 0), "after");
  std::string path = write_text(dir, "huge.log", log.text);
  auto s = import_torch_trace(path);
  ASSERT_EQ(s.kernels.size(), 1u);
  EXPECT_EQ(s.kernels[0].source.size(), huge.size() + 2);
  EXPECT_EQ(note_count(s, "unknown line"), 1);
  EXPECT_EQ(s.regions[0].graphs.back().text, "after");
  importers::TorchTraceOptions small;
  small.max_line_bytes = 1 << 20;
  auto capped = import_torch_trace(path, small);
  EXPECT_EQ(note_count(capped, "overlong line skipped"), 2);
  EXPECT_EQ(note_count(capped, "payload MD5 mismatch"), 1);  // the output code lost its only line
  EXPECT_EQ(capped.regions[0].graphs.back().text, "after");
}

// A record whose payload is larger than what may be kept (many short lines, so no line is overlong):
// the record stays without its payload, noted, and the records after it are all read.
TEST(ImportRobustness, OversizedPayloadIsSkippedAndCountedAndTheRestKept) {
  std::string dir = test::temp_dir();
  std::string big;
  for (int i = 0; i < 40000; ++i) big += "line " + std::to_string(i) + " of a very large output code file\n";
  big.pop_back();
  test::TraceText log;
  log.record("\"dynamo_output_graph\": {}", test::TraceText::ctx(0, 0), "before");
  log.record("\"inductor_output_code\": {\"filename\": \"big.py\"}", test::TraceText::ctx(0, 0), big);
  log.record("\"dynamo_output_graph\": {}", test::TraceText::ctx(1, 0), "after");
  std::string path = write_text(dir, "big_payload.log", log.text);
  importers::TorchTraceOptions capped;
  capped.max_payload_bytes = big.size() / 3;
  auto s = import_torch_trace(path, capped);
  EXPECT_EQ(note_count(s, "oversized payload skipped"), 1);
  EXPECT_EQ(note_count(s, "payload MD5 mismatch"), 0);  // not checked: nothing was kept to check
  for (const auto& k : s.kernels) EXPECT_TRUE(k.source.empty()) << k.name;  // the record is kept, its payload not
  ASSERT_EQ(s.regions.size(), 2u);
  EXPECT_EQ(s.regions[0].graphs.back().text, "before");
  EXPECT_EQ(s.regions[1].graphs.back().text, "after");
  // Without the cap the same file imports whole.
  auto whole = import_torch_trace(path);
  EXPECT_EQ(note_count(whole, "oversized payload skipped"), 0);
  ASSERT_EQ(whole.kernels.size(), 1u);
  EXPECT_EQ(whole.kernels[0].source.size(), big.size());
}

// Under a memory limit (RLIMIT_AS, in a child process), a line and a JSON record the memory left cannot
// hold are skipped and counted: the import finishes with the records after them, and the JSON parser
// that ran out of memory is not used again (it crashed the next parse before).
TEST(ImportRobustness, RecordsBeyondTheMemoryLeftAreSkippedAndTheImportFinishes) {
#if defined(__SANITIZE_ADDRESS__) || defined(KILN_SANITIZED)
  GTEST_SKIP() << "address-space limits do not work under AddressSanitizer";
#else
  std::string dir = test::temp_dir();
  // A 96 MB line (more than the limit below leaves), then a 24 MB JSON header whose parse needs far more
  // than the limit leaves (an array of 12 million numbers: a tape entry each), then a normal record.
  std::string path = dir + "/memory.log";
  {
    std::ofstream out(path, std::ios::binary);
    test::TraceText log;
    log.record("\"dynamo_output_graph\": {}", test::TraceText::ctx(0, 0), "first");
    out << log.text;
    out << std::string(96 << 20, 'x') << "\n";
    out << "V1122 07:00:09.000000 4242 torch/_dynamo/x.py:1] {\"str\": [";
    for (int i = 0; i < (12 << 20) - 1; ++i) out << "1,";
    out << "1]}\n";
    test::TraceText after;
    after.second = 10;
    after.record("\"dynamo_output_graph\": {}", test::TraceText::ctx(1, 0), "last");
    out << after.text;
  }
  // What the child has mapped now, plus 80 MB.
  int code = test::in_child_with_address_room(size_t(80) << 20, [&] {
    auto s = import_torch_trace(path);
    if (s.regions.size() != 2) return 10 + static_cast<int>(s.regions.size());
    if (s.regions[1].graphs.back().text != "last") return 3;
    if (note_count(s, "overlong line skipped") != 1) return 4;
    if (note_count(s, "corrupt JSON") != 1) return 5;
    return 0;
  });
  EXPECT_EQ(code, 0) << "2: threw; 3: last record lost; 4: the long line not skipped once; "
                        "5: the big JSON not counted as unreadable; 1x: x regions; 128 + n: killed by signal n";
#endif
}

// A log or trace whose reading fails (an I/O error: /proc/self/mem's first page is never mapped) is
// one error naming it, from either importer, not an empty or shortened session.
TEST(ImportRobustness, AFileThatCannotBeReadIsOneErrorNamingIt) {
  for (auto import : {+[](const std::string& p) { import_torch_trace(p); },
                      +[](const std::string& p) { import_kineto_trace(p); }}) {
    std::string error = test::error_of([&] { import("/proc/self/mem"); });
    EXPECT_NE(error.find("/proc/self/mem: cannot read ("), std::string::npos) << error;
  }
}

TEST(ImportRobustness, GarbageAndEmptyFiles) {
  std::string dir = test::temp_dir();
  std::mt19937 rng(11);
  std::string garbage(200000, '\0');
  for (auto& c : garbage) c = static_cast<char>(rng());
  auto s = import_torch_trace(write_text(dir, "garbage.log", garbage));
  EXPECT_TRUE(s.regions.empty());
  EXPECT_GT(note_count(s, "unknown line") + note_count(s, "payload line outside a record"), 0);
  EXPECT_TRUE(import_torch_trace(write_text(dir, "empty.log", "")).regions.empty());
  auto k = import_kineto_trace(write_text(dir, "garbage.json", "{" + garbage));
  EXPECT_GT(k.import_notes.size(), 0u);
}

TEST(ImportRobustness, KinetoCutAtManyPoints) {
  std::string text = test::read_file(test::data("traces/kineto_small_mlp.json"));
  std::string dir = test::temp_dir();
  size_t last = 0;
  for (size_t cut = text.find('{') + 1; cut < text.size(); cut += 499) {
    SCOPED_TRACE("cut at " + std::to_string(cut));
    session::Session s;
    ASSERT_NO_THROW(s = import_kineto_trace(write_text(dir, "cut.json", text.substr(0, cut))));
    EXPECT_GE(s.timeline.size(), last);
    last = s.timeline.size();
    EXPECT_EQ(note_count(s, "trace cut short"), 1);
  }
  EXPECT_GT(last, 150u);
}

TEST(ImportRobustness, KinetoCorruptEventsAreCounted) {
  std::string text = test::read_file(test::data("traces/kineto_small_mlp.json"));
  // Break two events' JSON without unbalancing the document.
  size_t a = text.find("\"ph\": \"X\", \"cat\": \"kernel\"");
  ASSERT_NE(a, std::string::npos);
  text.replace(a, 5, "\"ph\" ");
  size_t b = text.find("\"ph\": \"X\", \"cat\": \"cpu_op\"");
  ASSERT_NE(b, std::string::npos);
  text.replace(b, 5, "\"ph\",");
  auto s = import_kineto_trace(write_text(test::temp_dir(), "corrupt.json", text));
  EXPECT_EQ(note_count(s, "corrupt JSON event"), 2);
  EXPECT_EQ(s.timeline.size(), 172u);
  EXPECT_EQ(s.runs.size(), 1u);
}
