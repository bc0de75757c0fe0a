// TraceRecordPipeline against TorchTraceReader on the same files: the same records, digests and
// notes in the same order (the caller's own notes after each record included), on every bundled
// log, on damaged logs, and on logs long enough that the reading thread waits for the caller.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <thread>

#include <pthread.h>
#include <unistd.h>

#include "engine/base/error.h"
#include "engine/importers/common/byte_source.h"
#include "engine/importers/common/import_notes.h"
#include "engine/importers/common/md5.h"
#include "engine/importers/torch_trace/record_pipeline.h"
#include "engine/importers/torch_trace/torch_trace_records.h"
#include "tests/engine/importers/torch_trace/trace_text.h"
#include "tests/support/paths.h"

using namespace kiln;  // NOLINT
using namespace kiln::importers;  // NOLINT

namespace {

struct Seen {
  int64_t line, log_time_ns;
  std::string envelope_text, envelope, payload;
  bool has_payload, md5_checked, intact;
  bool operator==(const Seen& o) const {
    return line == o.line && log_time_ns == o.log_time_ns && envelope_text == o.envelope_text &&
           envelope == o.envelope && payload == o.payload &&
           has_payload == o.has_payload && md5_checked == o.md5_checked && intact == o.intact;
  }
};

struct Outcome {
  std::vector<Seen> records;
  std::vector<session::ImportNote> notes;
  int64_t pid = -1;
};

Seen seen(const TraceRecord& r) {
  return {r.line, r.log_time_ns, std::string(r.envelope_text), r.envelope.dump(), std::string(r.payload),
          r.has_payload, r.md5_checked, r.intact()};
}

// Reads the whole file as import_torch_trace's loop does, noting "record N" after every fifth
// record the way a caller's own notes follow the reader's.
template <typename Reader>
Outcome read_with(const std::string& path, TraceReaderOptions options) {
  ByteSource src(path);
  ImportTally tally;
  Reader reader(src, tally, options);
  Outcome out;
  TraceRecord r;
  while (reader.next(r)) {
    out.records.push_back(seen(r));
    if (out.records.size() % 5 == 0) tally.note("record " + std::to_string(out.records.size()));
  }
  out.notes = tally.notes(path);
  out.pid = reader.pid();
  return out;
}

void expect_same(const Outcome& pipe, const Outcome& serial, const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_EQ(pipe.records.size(), serial.records.size());
  for (size_t i = 0; i < serial.records.size(); ++i) EXPECT_TRUE(pipe.records[i] == serial.records[i]) << "record " << i;
  ASSERT_EQ(pipe.notes.size(), serial.notes.size());
  for (size_t i = 0; i < serial.notes.size(); ++i) {
    EXPECT_EQ(pipe.notes[i].what, serial.notes[i].what) << i;
    EXPECT_EQ(pipe.notes[i].count, serial.notes[i].count) << i;
    EXPECT_EQ(pipe.notes[i].example, serial.notes[i].example) << i;
  }
  EXPECT_EQ(pipe.pid, serial.pid);
}

void compare_on(const std::string& path, TraceReaderOptions options = {}) {
  auto serial = read_with<TorchTraceReader>(path, options);
  auto pipe = read_with<TraceRecordPipeline>(path, options);
  expect_same(pipe, serial, path);
  options.verify_md5 = false;
  expect_same(read_with<TraceRecordPipeline>(path, options), read_with<TorchTraceReader>(path, options),
              path + " without digests");
}

// Many records of mixed sizes (payloads up to 200 KB, more bytes than the threads hold between them),
// with damage every so often: wrong digests, unknown lines, payload lines outside a record, corrupt
// envelopes, blank lines, a cut at the end.
std::string long_damaged_log(size_t records, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string text;
  for (size_t i = 0; i < records; ++i) {
    size_t size = rng() % 10 == 0 ? 20000 + rng() % 180000 : rng() % 300;
    std::string payload(size, 'p');
    for (size_t at = 60; at < payload.size(); at += 61 + rng() % 40) payload[at] = '\n';
    std::string digest = md5_hex(payload);
    if (rng() % 23 == 0) digest[0] = digest[0] == '0' ? '1' : '0';
    char ts[32];
    std::snprintf(ts, sizeof ts, "%02zu:%02zu:%02zu.%06zu", (i / 3600) % 24, (i / 60) % 60, i % 60, i);
    std::string env = "{\"artifact\": {\"name\": \"a" + std::to_string(i) + "\"}, \"frame_id\": " + std::to_string(i % 7) +
                      ", \"has_payload\": \"" + digest + "\"}";
    if (rng() % 31 == 0) env.erase(env.size() / 2, 3);  // corrupt JSON: its payload goes with it
    text += "V1122 " + std::string(ts) + " 77 torch/_dynamo/x.py:1] " + env + "\n";
    for (size_t at = 0; at <= payload.size();) {
      size_t nl = std::min(payload.find('\n', at), payload.size());
      text += "\t" + payload.substr(at, nl - at) + "\n";
      at = nl + 1;
    }
    if (rng() % 37 == 0) text += "not a record line " + std::to_string(i) + "\n";
    if (rng() % 41 == 0) text += "\n\n";
    if (rng() % 43 == 0) text += "V1122 " + std::string(ts) + " 77 x.py:1] {\"str\": [\"f.py\", " + std::to_string(i) + "]}\n";
  }
  text += "trailing garbage\n\tpayload outside a record\n";
  text += "V1122 23:59:59.000000 77 x.py:1] {\"artifact\": {\"name\": \"cut\"}, \"has_payload\": \"0123\"}\n\tcut he";
  return text;
}

}  // namespace

TEST(TraceRecordPipeline, GivesWhatTheReaderGivesOnEveryBundledLog) {
  size_t logs = 0;
  for (const auto* dir : {"tlparse", "tlparse/multi_rank_logs", "traces"}) {
    for (const auto& entry : std::filesystem::directory_iterator(test::data(dir))) {
      if (entry.path().extension() != ".log") continue;
      compare_on(entry.path().string());
      ++logs;
    }
  }
  EXPECT_GE(logs, 14u);
}

TEST(TraceRecordPipeline, GivesWhatTheReaderGivesOnLongDamagedLogs) {
  for (uint32_t seed : {1u, 2u}) {
    std::string path = test::write_temp_file("long" + std::to_string(seed) + ".log", long_damaged_log(3000, seed));
    ASSERT_GT(std::filesystem::file_size(path), size_t(24) << 20);  // more than the threads may hold (16 MiB)
    compare_on(path);
    TraceReaderOptions small;
    small.max_payload_bytes = 50000;  // some payloads skipped as oversized
    small.max_line_bytes = 150;       // and some lines as overlong
    compare_on(path, small);
  }
}

TEST(TraceRecordPipeline, ThePipelineReadsOnOtherThreadsAndDigestsAreNeverPending) {
  std::string path = test::write_temp_file("few.log", long_damaged_log(200, 3));
  ByteSource src(path);
  ImportTally tally;
  TraceRecordPipeline pipe(src, tally, {});
  EXPECT_TRUE(pipe.threaded());
  TraceRecord r;
  int mismatches = 0;
  while (pipe.next(r)) {
    EXPECT_FALSE(r.md5_pending);
    if (r.md5_checked && !r.intact()) ++mismatches;
  }
  EXPECT_GT(mismatches, 0);
  EXPECT_EQ(tally.count("payload MD5 mismatch"), mismatches);
  EXPECT_FALSE(pipe.next(r));  // stays at the end
}

TEST(TraceRecordPipeline, ACallerThatStopsEarlyEndsTheThreadsCleanly) {
  std::string path = test::write_temp_file("stop.log", long_damaged_log(3000, 4));
  for (int records : {0, 1, 70, 1000}) {
    ByteSource src(path);
    ImportTally tally;
    TraceRecordPipeline pipe(src, tally, {});
    TraceRecord r;
    for (int i = 0; i < records; ++i) ASSERT_TRUE(pipe.next(r));
  }  // each destructor returns: the reading thread may be waiting for room, the digest thread for work
}

// What the reading thread throws reaches the caller's next(): here a read that fails on the first chunk
// (/proc/self/mem's first page is never mapped: EIO), never taken for the end of the log.
TEST(TraceRecordPipeline, WhatTheReadingThreadThrowsReachesTheCaller) {
  ByteSource src("/proc/self/mem");
  ImportTally tally;
  TraceRecordPipeline pipe(src, tally, {});
  ASSERT_TRUE(pipe.threaded());
  TraceRecord r;
  std::string error = test::error_of([&] { pipe.next(r); });
  EXPECT_NE(error.find("/proc/self/mem: cannot read ("), std::string::npos) << error;
}

// With no thread to be had (an address-space limit, in a child process, below one thread's stack),
// the records are read on the caller's thread: the same records, digests and notes as the reader's.
TEST(TraceRecordPipeline, WithNoThreadToBeHadTheCallersThreadReadsTheSame) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || defined(KILN_SANITIZED)
  GTEST_SKIP() << "address-space limits do not work under the sanitizers";
#else
  pthread_attr_t attr;
  size_t stack = 0;
  ASSERT_EQ(pthread_getattr_default_np(&attr), 0);
  pthread_attr_getstacksize(&attr, &stack);
  pthread_attr_destroy(&attr);
  // Reading needs its 4 MiB chunk and a few records beside what is mapped now: the limit leaves
  // 7.5 MiB, less than one thread's stack.
  constexpr size_t kRoom = (15u << 20) / 2;
  if (stack <= kRoom) GTEST_SKIP() << "threads' stacks here (" << stack << " bytes) fit the limit";
  std::string path = test::write_temp_file("nothreads.log", long_damaged_log(40, 5));
  const auto expected = read_with<TorchTraceReader>(path, {});
  ASSERT_GT(expected.records.size(), 30u);
  ASSERT_FALSE(expected.notes.empty());
  int code = test::in_child_with_address_room(kRoom, [&] {
    // glibc keeps the stacks of ended threads (earlier tests') for new ones: threads parked on a pipe
    // hold them until no further thread can start.
    int park[2];
    if (pipe(park) != 0) return 9;
    for (int parked = 0;; ++parked) {
      if (parked > 256) return 9;
      try {
        std::thread([fd = park[0]] {
          char c;
          while (::read(fd, &c, 1) < 0) {
          }
        }).detach();
      } catch (const std::exception&) {
        break;
      }
    }
    ByteSource src(path);
    ImportTally tally;
    TraceRecordPipeline pipe(src, tally, {});
    if (pipe.threaded()) return 3;
    TraceRecord r;
    size_t n = 0;
    while (pipe.next(r)) {
      if (n >= expected.records.size() || !(seen(r) == expected.records[n])) return 4;
      if (++n % 5 == 0) tally.note("record " + std::to_string(n));
    }
    auto notes = tally.notes(path);
    if (n != expected.records.size()) return 5;
    if (notes.size() != expected.notes.size()) return 6;
    for (size_t i = 0; i < notes.size(); ++i)
      if (notes[i].what != expected.notes[i].what || notes[i].count != expected.notes[i].count ||
          notes[i].example != expected.notes[i].example)
        return 7;
    return pipe.pid() != expected.pid ? 8 : 0;
  });
  EXPECT_EQ(code, 0) << "2: threw; 3: a thread started under the limit; 4: a record differs; 5: a record count; "
                        "6, 7: the notes differ; 8: pid; 9: threads could not be parked; 128 + n: killed by signal n";
#endif
}
