// The streaming layers under the importers: ByteSource (plain and gzip), LineReader (chunk
// boundaries, CRLF, overlong lines) and TorchTraceReader (headers, payloads, MD5, bad lines).
#include <gtest/gtest.h>
#include <zlib.h>

#include <fstream>

#include "engine/base/error.h"
#include "engine/importers/common/byte_source.h"
#include "engine/importers/common/import_notes.h"
#include "engine/importers/common/line_reader.h"
#include "engine/importers/common/md5.h"
#include "engine/importers/torch_trace/torch_trace_records.h"
#include "tests/engine/importers/torch_trace/trace_text.h"
#include "tests/support/paths.h"

using namespace kiln;  // NOLINT
using namespace kiln::importers;  // NOLINT

namespace {

std::string write_gzip(const std::string& name, const std::string& text) {
  std::string path = test::temp_dir() + "/" + name;
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
  gzclose(f);
  return path;
}

std::vector<std::string> all_lines(const std::string& path, size_t chunk, size_t max_line = size_t(1) << 30,
                                   int64_t* overlong = nullptr) {
  ByteSource src(path);
  LineReader lines(src, max_line, chunk);
  std::vector<std::string> out;
  std::string_view l;
  while (lines.next(l)) out.emplace_back(l);
  if (overlong) *overlong = lines.overlong_lines();
  return out;
}

// A torch-trace reader over `text`, written to a temp file `name`, with the tally it counts damage in.
struct ReaderOver {
  ReaderOver(const std::string& name, const std::string& text) : src(test::write_temp_file(name, text)), reader(src, tally) {}
  ByteSource src;
  ImportTally tally;
  TorchTraceReader reader;
};

}  // namespace

TEST(LineReader, SplitsAcrossEveryChunkSize) {
  std::string text = "alpha\nbeta\r\n\ngamma-is-a-longer-line-than-the-chunk\nlast";
  std::string path = test::write_temp_file("lines.txt", text);
  for (size_t chunk : {64u, 65u, 100u, 4096u}) {
    auto lines = all_lines(path, chunk);
    EXPECT_EQ(lines, (std::vector<std::string>{"alpha", "beta", "", "gamma-is-a-longer-line-than-the-chunk", "last"}))
        << chunk;
  }
}

TEST(LineReader, LongLinesGrowTheBufferOverlongOnesAreSkipped) {
  std::string big(1 << 20, 'x');
  std::string path = test::write_temp_file("long.txt", "a\n" + big + "\nb\n");
  auto lines = all_lines(path, 64);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[1].size(), big.size());
  int64_t overlong = 0;
  lines = all_lines(path, 4096, 1000, &overlong);
  EXPECT_EQ(lines, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(overlong, 1);
}

// A read that fails is an error naming the file, never the end of input (an import cut short without
// a word). /proc/self/mem is a regular file whose first page (address 0) is never mapped: reading it
// fails with EIO; a directory opens but fails with EISDIR.
TEST(ByteSource, AFailedReadIsAnErrorNamingTheFile) {
  ByteSource mem("/proc/self/mem");
  char buf[64];
  std::string error = test::error_of([&] { mem.read(buf, sizeof buf); });
  EXPECT_NE(error.find("/proc/self/mem: cannot read ("), std::string::npos) << error;
  error = test::error_of([&] { mem.read_at(0, buf, sizeof buf); });
  EXPECT_NE(error.find("/proc/self/mem: cannot read ("), std::string::npos) << error;

  std::string dir = test::temp_dir();
  ByteSource d(dir);
  error = test::error_of([&] { d.read(buf, sizeof buf); });
  EXPECT_EQ(error, dir + ": cannot read (Is a directory)");
}

TEST(ByteSource, GzipIsReadTransparentlyAndACutStreamSaysSo) {
  std::string text;
  for (int i = 0; i < 20000; ++i) text += "line " + std::to_string(i) + "\n";
  std::string gz = write_gzip("t.log.gz", text);
  EXPECT_TRUE(is_gzip_file(gz));
  auto lines = all_lines(gz, 4096);
  ASSERT_EQ(lines.size(), 20000u);
  EXPECT_EQ(lines.back(), "line 19999");

  std::string bytes = test::read_file(gz);
  std::string cut = test::write_temp_file("cut.log.gz", bytes.substr(0, bytes.size() / 2));
  ByteSource src(cut);
  std::string got;
  char buf[1000];
  size_t n;
  while ((n = src.read(buf, sizeof buf)) > 0) got.append(buf, n);
  EXPECT_TRUE(src.truncated());
  EXPECT_GT(got.size(), 1000u);
  EXPECT_EQ(text.compare(0, got.size(), got), 0);  // what came out is a prefix of the original
  EXPECT_THROW(ByteSource("/nonexistent/file.log"), Error);
}

TEST(TorchTraceReader, GlogHeader) {
  size_t at = 0;
  int64_t t = 0, pid = 0;
  ASSERT_TRUE(parse_glog_header("V1122 07:29:54.143000 1175 torch/_dynamo/utils.py:2126] {\"a\": 1}", &at, &t, &pid));
  EXPECT_EQ(at, 56u);
  EXPECT_EQ(pid, 1175);
  EXPECT_EQ(t, ((((325LL * 24 + 7) * 60 + 29) * 60 + 54) * 1000000000LL) + 143000000LL);  // 22 Nov = day 326
  EXPECT_TRUE(parse_glog_header("I0403 07:28:48.051000 139877824898048 torch/x.py:19] {}", &at, &t));
  EXPECT_FALSE(parse_glog_header("V1122 07:29:54.143000 1175 torch/_dynamo/utils.py:2126] not json", &at, &t));
  EXPECT_FALSE(parse_glog_header("\t{\"name\": 1}", &at, &t));
  EXPECT_FALSE(parse_glog_header("hello world, this is not a header at all", &at, &t));
  // A thread id longer than an int64 (found by the TORCH_TRACE fuzzer: signed overflow) reads as no pid;
  // the record is still read.
  ASSERT_TRUE(parse_glog_header("V1206 15:24:45.403000 16677439877824898048123 t.py:1] {}", &at, &t, &pid));
  EXPECT_EQ(pid, -1);
  ASSERT_TRUE(parse_glog_header("V1206 15:24:45.403000 9223372036854775807 t.py:1] {}", &at, &t, &pid));
  EXPECT_EQ(pid, INT64_MAX);
}

TEST(TorchTraceReader, RecordsPayloadsAndDigests) {
  test::TraceText log;
  log.record("\"str\": [\"a.py\", 0]");
  log.record("\"dynamo_output_graph\": {}", test::TraceText::ctx(0, 0), "line one\n    line two\n");
  log.text += "this line is not a record\n";
  log.record("\"chromium_event\": {}", test::TraceText::ctx(0, 0), "{\"name\": \"x\"}");
  std::string text = log.text;
  // A wrong digest on the last record.
  size_t at = text.rfind("\"has_payload\": \"") + 16;
  text[at] = text[at] == '0' ? '1' : '0';
  ReaderOver over("r.log", text);
  auto& reader = over.reader;
  const auto& tally = over.tally;
  TraceRecord r;
  ASSERT_TRUE(reader.next(r));
  EXPECT_EQ(r.line, 1);
  EXPECT_FALSE(r.has_payload);
  EXPECT_EQ(r.envelope["str"].size(), 2u);
  ASSERT_TRUE(reader.next(r));
  EXPECT_EQ(r.payload, "line one\n    line two\n");
  EXPECT_TRUE(r.md5_checked);
  EXPECT_TRUE(r.md5_ok);
  EXPECT_EQ(r.envelope["frame_id"].i64(-1), 0);
  ASSERT_TRUE(reader.next(r));
  EXPECT_EQ(r.payload, "{\"name\": \"x\"}");
  EXPECT_FALSE(r.md5_ok);
  EXPECT_FALSE(reader.next(r));
  EXPECT_EQ(tally.count("unknown line"), 1);
  EXPECT_EQ(tally.count("payload MD5 mismatch"), 1);
  EXPECT_EQ(reader.pid(), 4242);
}

TEST(TorchTraceReader, BlankLinesInsideAPayloadStayBlankLinesElsewhereDoNot) {
  std::string payload = "a\n\nb";
  std::string text = "\nV1122 07:00:00.000000 1 x.py:1] {\"artifact\": {\"name\": \"n\"}, \"has_payload\": \"" +
                     md5_hex(payload) + "\"}\n\ta\n\n\tb\n\n\n";
  ReaderOver over("blank.log", text);
  auto& reader = over.reader;
  TraceRecord r;
  ASSERT_TRUE(reader.next(r));
  EXPECT_EQ(r.payload, payload);
  EXPECT_TRUE(r.md5_ok);
  EXPECT_FALSE(reader.next(r));
  EXPECT_EQ(over.tally.total(), 0);
}

namespace {

// Records with large payloads (hashed on the second thread in the background mode), one of them
// with a wrong digest and an unknown line after it, and a small one with a wrong digest.
std::string log_with_large_payloads() {
  std::string text;
  auto record = [&](int i, const std::string& payload, bool right_digest) {
    std::string digest = md5_hex(payload);
    if (!right_digest) digest[0] = digest[0] == '0' ? '1' : '0';
    text += "V1122 07:00:0" + std::to_string(i) + ".000000 1 x.py:1] {\"artifact\": {\"name\": \"a" + std::to_string(i) +
            "\"}, \"has_payload\": \"" + digest + "\"}\n";
    for (size_t at = 0; at <= payload.size();) {  // one payload line per "\n"-separated line
      size_t nl = std::min(payload.find('\n', at), payload.size());
      text += "\t" + payload.substr(at, nl - at) + "\n";
      at = nl + 1;
    }
  };
  std::string big(100000, 'x');
  for (size_t i = 100; i < big.size(); i += 101) big[i] = '\n';
  std::string big2 = big;
  big2.replace(0, 100, std::string(100, '\n'));  // payload lines that are empty
  record(0, big, true);
  record(1, big2, false);
  text += "an unknown line\n";
  record(2, "small", false);
  record(3, big, false);
  return text;
}

struct ReadOutcome {
  std::vector<bool> intact;
  std::vector<std::string> payloads;
  std::vector<session::ImportNote> notes;
};

// Reads every record, making a note of its own per record as a caller would (after next()).
ReadOutcome read_all(const std::string& text, bool background) {
  ByteSource src(test::write_temp_file(background ? "bg.log" : "fg.log", text));
  ImportTally tally;
  TraceReaderOptions o;
  o.md5_in_background = background;
  TorchTraceReader reader(src, tally, o);
  ReadOutcome out;
  TraceRecord r;
  while (reader.next(r)) {
    out.payloads.emplace_back(r.payload);
    tally.note("record " + std::to_string(out.payloads.size()));
    out.intact.push_back(r.intact());
  }
  out.notes = tally.notes("x.log");
  return out;
}

}  // namespace

TEST(TorchTraceReader, DigestsInTheBackgroundGiveWhatTheyGiveAtOnce) {
  std::string text = log_with_large_payloads();
  auto fg = read_all(text, false), bg = read_all(text, true);
  EXPECT_EQ(fg.intact, (std::vector<bool>{true, false, false, false}));
  EXPECT_EQ(bg.intact, fg.intact);
  EXPECT_EQ(bg.payloads, fg.payloads);
  ASSERT_EQ(bg.notes.size(), fg.notes.size());
  for (size_t i = 0; i < fg.notes.size(); ++i) {
    EXPECT_EQ(bg.notes[i].what, fg.notes[i].what) << i;
    EXPECT_EQ(bg.notes[i].count, fg.notes[i].count) << i;
    EXPECT_EQ(bg.notes[i].example, fg.notes[i].example) << i;
  }
  // The mismatch is noted after what was read with its record and before the caller's note on it.
  ASSERT_EQ(fg.notes.size(), 6u);
  EXPECT_EQ(fg.notes[1].what, "unknown line");
  EXPECT_EQ(fg.notes[2].what, "payload MD5 mismatch");
  EXPECT_EQ(fg.notes[2].count, 3);
  EXPECT_EQ(fg.notes[3].what, "record 2");
}

TEST(TorchTraceReader, DigestsNotAskedForAreNotedByTheEnd) {
  std::string text = log_with_large_payloads();
  auto fg = read_all(text, false);
  ByteSource src(test::write_temp_file("settle.log", text));
  ImportTally tally;
  TraceReaderOptions o;
  o.md5_in_background = true;
  TorchTraceReader reader(src, tally, o);
  TraceRecord r;
  std::vector<bool> pending;
  for (int i = 1; reader.next(r); ++i) {
    pending.push_back(r.md5_pending);
    tally.note("record " + std::to_string(i));
  }
  EXPECT_EQ(pending, (std::vector<bool>{true, true, false, true}));  // the small payload is checked at once
  auto notes = tally.notes("x.log");
  ASSERT_EQ(notes.size(), fg.notes.size());
  for (size_t i = 0; i < notes.size(); ++i) {
    EXPECT_EQ(notes[i].what, fg.notes[i].what) << i;
    EXPECT_EQ(notes[i].count, fg.notes[i].count) << i;
  }
}

TEST(TorchTraceReader, AReaderDestroyedWhileDigestsAreQueuedStopsCleanly) {
  std::string text = log_with_large_payloads();
  for (int records = 1; records <= 4; ++records) {
    ByteSource src(test::write_temp_file("stop.log", text));
    ImportTally tally;
    TraceReaderOptions o;
    o.md5_in_background = true;
    TorchTraceReader reader(src, tally, o);
    TraceRecord r;
    for (int i = 0; i < records; ++i) ASSERT_TRUE(reader.next(r));
  }
}
