// TorchTraceReader: splits a TORCH_TRACE log into records, streaming. A record is one glog header
//   V1122 07:29:54.143000 1175 torch/_dynamo/utils.py:2126] {"<type>": {...}, "frame_id": 0, ...}
// followed by its payload lines, each starting with a tab. The envelope JSON is parsed here and
// the payload checked against the envelope's "has_payload" MD5.
//
// next(record)
//   post: true with the next well-formed record; false at the end of input. Everything else is
//         counted in the tally, never thrown: "unknown line" (neither header nor payload),
//         "corrupt JSON" (a header whose envelope does not parse; its payload is skipped),
//         "payload MD5 mismatch" (the record is still returned, md5_ok false), "payload line
//         outside a record", "overlong line". A file cut anywhere yields every record before the cut
//         (the cut record with a mismatching MD5 when its payload was cut).
//   The record's views stay valid until the next call.
//   With options.md5_in_background, large payloads' digests are computed on a second thread, in
//   order, while reading and the caller go on (at most 32 MiB of payloads wait): md5_ok is then not
//   known when next() returns; the record's intact() waits for it. A mismatch note takes the place
//   in the tally it has without the option (before any note the caller made for its record), at
//   the latest when next() returns false.
//   With options.md5_by_caller (and verify_md5), nothing is hashed here: a record whose digest is to
//   be checked comes back with md5_checked, md5_ok true and md5_expected holding the envelope's
//   digest; the caller checks it (and notes "payload MD5 mismatch" with trace_line_example()).
// swap_payload(buffer)
//   pre: the last record came from next() without md5_in_background. post: `buffer` holds that
//   record's payload bytes (or nothing, when it had none kept) and the reader keeps buffer's old
//   storage for the next record: the payload changes owner without a copy; record.payload stays
//   valid only as long as `buffer` is not changed.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "engine/importers/common/byte_source.h"
#include "engine/importers/common/import_notes.h"
#include "engine/importers/common/json_doc.h"
#include "engine/importers/common/line_reader.h"

namespace kiln::importers {

class TorchTraceReader;

struct TraceRecord {
  int64_t line = 0;          // 1-based line of the header
  int64_t log_time_ns = -1;  // the header's month/day/time as ns since 1 January 00:00 (no year)
  JsonValue envelope;        // the parsed envelope object
  std::string_view envelope_text;  // the JSON text it was parsed from
  std::string_view payload;  // payload lines without their tab, joined by "\n"
  bool has_payload = false;  // payload lines were present
  bool md5_checked = false;  // the envelope carried "has_payload" and checking was on
  bool md5_ok = true;        // (not yet known while md5_pending)
  bool md5_pending = false;  // the digest is being computed in the background
  std::string_view md5_expected;  // with md5_by_caller: the digest to check when md5_checked
  // False when the payload's digest did not match; waits for a digest still being computed.
  bool intact() const;

 private:
  friend class TorchTraceReader;
  TorchTraceReader* reader_ = nullptr;
  uint64_t md5_job_ = 0;
};

struct TraceReaderOptions {
  bool verify_md5 = true;
  bool md5_in_background = false;  // see above; payloads under 32 KiB are always checked at once
  bool md5_by_caller = false;      // see above
  size_t max_line_bytes = size_t(1) << 30;
  // A record whose payload grows past this is kept without its payload (noted "oversized payload
  // skipped"): memory stays bounded whatever one record holds.
  size_t max_payload_bytes = size_t(1) << 30;
};

class TorchTraceReader {
 public:
  TorchTraceReader(ByteSource& source, ImportTally& tally, TraceReaderOptions options = {});
  ~TorchTraceReader();
  TorchTraceReader(const TorchTraceReader&) = delete;
  TorchTraceReader& operator=(const TorchTraceReader&) = delete;
  bool next(TraceRecord& record);
  void swap_payload(std::string& buffer) { payload_.swap(buffer); }
  uint64_t bytes_read() const { return source_.bytes_read(); }
  int64_t pid() const { return pid_; }  // of the first record's header, -1 before one

  // Waits for the digests queued up to `job` (TraceRecord::intact()); true when that one matched.
  bool settle_md5(uint64_t job);

 private:
  struct Md5Worker;
  bool start_md5_worker();  // false when no thread could be started
  bool read_line(std::string_view& line);
  ByteSource& source_;
  ImportTally& tally_;
  TraceReaderOptions options_;
  LineReader lines_;
  JsonParser parser_;
  std::string header_;       // the header line of the record being assembled
  std::string envelope_text_;  // the header line of the record last returned
  int64_t header_line_ = 0;  // 0: none pending
  std::string payload_;
  int64_t overlong_seen_ = 0;
  int64_t pid_ = -1;
  std::unique_ptr<Md5Worker> md5_worker_;  // started for the first large payload
  bool md5_worker_failed_ = false;
};

// Parses the glog prefix of a header line. post: true, the offset of the JSON text in *json_at,
// the timestamp in *time_ns and (when asked) the process id in *pid; false when the line is not a
// glog header followed by "{".
bool parse_glog_header(std::string_view line, size_t* json_at, int64_t* time_ns, int64_t* pid = nullptr);

// "line N: <the first 120 bytes of text>": the example the reader's notes give for a record.
std::string trace_line_example(int64_t line, std::string_view text);

}  // namespace kiln::importers
