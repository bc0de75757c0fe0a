// Blank lines between payload lines (some editors strip a lone tab) stay in the payload; blank
// lines anywhere else are ignored.
#include "engine/importers/torch_trace/torch_trace_records.h"

#include "engine/importers/common/md5.h"

namespace kiln::importers {

namespace {

// A buffer that one large record grew past this is released afterwards rather than kept for reuse.
constexpr size_t kKeptBufferBytes = size_t(64) << 20;

bool digits(std::string_view s, size_t at, size_t n) {
  if (at + n > s.size()) return false;
  for (size_t i = at; i < at + n; ++i)
    if (s[i] < '0' || s[i] > '9') return false;
  return true;
}

int number(std::string_view s, size_t at, size_t n) {
  int v = 0;
  for (size_t i = at; i < at + n; ++i) v = v * 10 + (s[i] - '0');
  return v;
}

std::string line_example(int64_t line, std::string_view text) {
  return "line " + std::to_string(line) + ": " + std::string(text.substr(0, 120));
}

}  // namespace

bool parse_glog_header(std::string_view line, size_t* json_at, int64_t* time_ns, int64_t* pid) {
  // V1122 07:29:54.143000 1175 path:line] {
  if (line.size() < 24) return false;
  char level = line[0];
  if (level != 'V' && level != 'I' && level != 'W' && level != 'E' && level != 'F' && level != 'D' && level != 'C')
    return false;
  if (!digits(line, 1, 4) || line[5] != ' ' || !digits(line, 6, 2) || line[8] != ':' || !digits(line, 9, 2) ||
      line[11] != ':' || !digits(line, 12, 2) || line[14] != '.')
    return false;
  size_t frac_end = 15;
  while (frac_end < line.size() && line[frac_end] >= '0' && line[frac_end] <= '9') ++frac_end;
  size_t close = line.find("] ", frac_end);
  if (close == std::string_view::npos) return false;
  size_t j = close + 2;
  while (j < line.size() && line[j] == ' ') ++j;
  if (j >= line.size() || line[j] != '{') return false;
  static const int kDaysBefore[13] = {0, 0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334};
  int month = number(line, 1, 2), day = number(line, 3, 2);
  int64_t days = (month >= 1 && month <= 12 ? kDaysBefore[month] : 0) + (day > 0 ? day - 1 : 0);
  int64_t secs = ((days * 24 + number(line, 6, 2)) * 60 + number(line, 9, 2)) * 60 + number(line, 12, 2);
  int64_t frac_ns = 0;
  size_t frac_digits = std::min<size_t>(frac_end - 15, 9);
  for (size_t i = 0; i < 9; ++i) frac_ns = frac_ns * 10 + (i < frac_digits ? line[15 + i] - '0' : 0);
  *time_ns = secs * 1000000000LL + frac_ns;
  *json_at = j;
  if (pid) {
    size_t p = frac_end;
    while (p < close && line[p] == ' ') ++p;
    int64_t v = 0;
    size_t q = p;
    while (q < close && line[q] >= '0' && line[q] <= '9') v = v * 10 + (line[q++] - '0');
    *pid = q > p ? v : -1;
  }
  return true;
}

TorchTraceReader::TorchTraceReader(ByteSource& source, ImportTally& tally, TraceReaderOptions options)
    : source_(source), tally_(tally), options_(options), lines_(source, options.max_line_bytes) {}

bool TorchTraceReader::read_line(std::string_view& line) {
  bool ok = lines_.next(line);
  if (lines_.overlong_lines() > overlong_seen_) {
    tally_.note("overlong line skipped",
                "line " + std::to_string(lines_.first_overlong_line()) + " is longer than the memory left or " +
                    std::to_string(options_.max_line_bytes) + " bytes",
                lines_.overlong_lines() - overlong_seen_);
    overlong_seen_ = lines_.overlong_lines();
  }
  return ok;
}

bool TorchTraceReader::next(TraceRecord& record) {
  std::string_view line;
  while (true) {
    // Find a header: the one left over from the previous call, or the next one in the input.
    if (header_line_ == 0) {
      if (!read_line(line)) return false;
      if (line.empty()) continue;
      if (line[0] == '\t') {
        tally_.note("payload line outside a record", line_example(lines_.line_number(), line));
        continue;
      }
      size_t at;
      int64_t t;
      if (!parse_glog_header(line, &at, &t)) {
        tally_.note("unknown line", line_example(lines_.line_number(), line));
        continue;
      }
      header_.assign(line.data(), line.size());
      header_line_ = lines_.line_number();
    }

    size_t json_at = 0;
    int64_t t_ns = -1, pid = -1;
    parse_glog_header(header_, &json_at, &t_ns, &pid);
    if (pid_ < 0) pid_ = pid;
    std::string_view json(header_);
    json.remove_prefix(json_at);
    std::string error;
    bool parsed = parser_.parse(json, record.envelope, &error) && record.envelope.is_object();
    int64_t this_line = header_line_;
    if (!parsed)
      tally_.note("corrupt JSON", line_example(this_line, json) + (error.empty() ? "" : "  (" + error + ")"));

    // `json` views header_, which the loop below overwrites with the next header: keep what the
    // MD5 note needs now.
    std::string json_example = line_example(this_line, json);
    // Payload lines up to the next header (which is kept for the next call).
    payload_.clear();
    if (payload_.capacity() > kKeptBufferBytes) std::string().swap(payload_);  // one large record's memory
    bool any_payload = false;
    uint64_t oversized = 0;  // bytes of a payload past max_payload_bytes (then nothing is kept)
    int pending_blanks = 0;
    header_line_ = 0;
    while (read_line(line)) {
      if (!line.empty() && line[0] == '\t') {
        if (oversized == 0 && payload_.size() + pending_blanks + line.size() > options_.max_payload_bytes) {
          oversized = payload_.size();
          std::string().swap(payload_);  // give the memory back now
        }
        if (oversized > 0) {
          oversized += pending_blanks + line.size();
          pending_blanks = 0;
          continue;
        }
        for (; pending_blanks > 0; --pending_blanks) payload_ += '\n';
        if (any_payload) payload_ += '\n';
        payload_.append(line.data() + 1, line.size() - 1);
        any_payload = true;
        continue;
      }
      if (line.empty()) {
        if (any_payload) ++pending_blanks;
        continue;
      }
      size_t at;
      int64_t t;
      if (parse_glog_header(line, &at, &t)) {
        header_.assign(line.data(), line.size());
        header_line_ = lines_.line_number();
        break;
      }
      tally_.note("unknown line", line_example(lines_.line_number(), line));
    }
    if (!parsed) continue;  // its payload, if any, went with it

    record.line = this_line;
    record.log_time_ns = t_ns;
    record.payload = payload_;
    record.has_payload = any_payload && oversized == 0;
    record.md5_checked = false;
    record.md5_ok = true;
    if (oversized > 0) {
      tally_.note("oversized payload skipped", json_example + "  (over " + std::to_string(oversized) +
                                                   " bytes; the limit is " +
                                                   std::to_string(options_.max_payload_bytes) + ")");
      record.payload = {};
    }
    JsonValue expected = record.envelope["has_payload"];
    if (oversized == 0 && options_.verify_md5 && expected.is_string()) {
      record.md5_checked = true;
      record.md5_ok = md5_hex(payload_) == expected.str();
      if (!record.md5_ok) tally_.note("payload MD5 mismatch", json_example);
    }
    return true;
  }
}

}  // namespace kiln::importers
