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
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "engine/importers/common/byte_source.h"
#include "engine/importers/common/import_notes.h"
#include "engine/importers/common/json_doc.h"
#include "engine/importers/common/line_reader.h"

namespace kiln::importers {

struct TraceRecord {
  int64_t line = 0;          // 1-based line of the header
  int64_t log_time_ns = -1;  // the header's month/day/time as ns since 1 January 00:00 (no year)
  JsonValue envelope;        // the parsed envelope object
  std::string_view payload;  // payload lines without their tab, joined by "\n"
  bool has_payload = false;  // payload lines were present
  bool md5_checked = false;  // the envelope carried "has_payload" and checking was on
  bool md5_ok = true;
};

struct TraceReaderOptions {
  bool verify_md5 = true;
  size_t max_line_bytes = size_t(1) << 30;
  // A record whose payload grows past this is kept without its payload (noted "oversized payload
  // skipped"): memory stays bounded whatever one record holds.
  size_t max_payload_bytes = size_t(1) << 30;
};

class TorchTraceReader {
 public:
  TorchTraceReader(ByteSource& source, ImportTally& tally, TraceReaderOptions options = {});
  bool next(TraceRecord& record);
  uint64_t bytes_read() const { return source_.bytes_read(); }
  int64_t pid() const { return pid_; }  // of the first record's header, -1 before one

 private:
  bool read_line(std::string_view& line);
  ByteSource& source_;
  ImportTally& tally_;
  TraceReaderOptions options_;
  LineReader lines_;
  JsonParser parser_;
  std::string header_;       // the header line of the record being assembled
  int64_t header_line_ = 0;  // 0: none pending
  std::string payload_;
  int64_t overlong_seen_ = 0;
  int64_t pid_ = -1;
};

// Parses the glog prefix of a header line. post: true, the offset of the JSON text in *json_at,
// the timestamp in *time_ns and (when asked) the process id in *pid; false when the line is not a
// glog header followed by "{".
bool parse_glog_header(std::string_view line, size_t* json_at, int64_t* time_ns, int64_t* pid = nullptr);

}  // namespace kiln::importers
