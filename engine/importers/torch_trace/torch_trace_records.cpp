// Blank lines between payload lines (some editors strip a lone tab) stay in the payload; blank
// lines anywhere else are ignored.
#include "engine/importers/torch_trace/torch_trace_records.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <system_error>
#include <thread>

#include "engine/importers/common/md5.h"

namespace kiln::importers {

namespace {

// Payloads this long are hashed on the second thread (with md5_in_background); shorter ones cost
// less than handing them over.
constexpr size_t kBackgroundMd5Bytes = 32 << 10;

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

}  // namespace

std::string trace_line_example(int64_t line, std::string_view text) {
  return "line " + std::to_string(line) + ": " + std::string(text.substr(0, 120));
}

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
    bool too_long = false;  // more digits than an int64 holds: no pid (a fuzzed header overflowed here)
    for (; q < close && line[q] >= '0' && line[q] <= '9'; ++q) {
      const int d = line[q] - '0';
      if (too_long || v > (INT64_MAX - d) / 10) too_long = true;
      else v = v * 10 + d;
    }
    *pid = q > p && !too_long ? v : -1;
  }
  return true;
}

// Payloads waiting for their digest hold at most this much memory (besides the one being read):
// past it, the reader waits for the oldest.
constexpr size_t kPendingMd5Bytes = 32 << 20;

// One thread that hashes queued payloads in order. The reader owns the queue's front: it takes
// finished digests from there (their notes in record order) and frees a payload once its record
// is no longer the one last returned.
struct TorchTraceReader::Md5Worker {
  struct Job {
    uint64_t id = 0;
    std::string payload;  // moved out of the reader: the returned record views it
    std::string expected, example;
    size_t note_at = 0;   // the tally's size when its record was returned
    bool done = false, ok = true, checked = true, noted = false;
  };
  std::mutex m;
  std::condition_variable work, finished;
  std::deque<std::unique_ptr<Job>> jobs;  // in record order; jobs[next] is the next to hash
  size_t next = 0;
  size_t pending_bytes = 0;               // payload bytes of jobs not yet hashed
  uint64_t last_id = 0;
  bool stop = false;
  std::thread thread;  // last: started once the members above exist

  Md5Worker() : thread([this] { run(); }) {}
  ~Md5Worker() {
    {
      std::lock_guard<std::mutex> lock(m);
      stop = true;
    }
    work.notify_all();
    thread.join();
  }
  void run() {
    std::unique_lock<std::mutex> lock(m);
    while (true) {
      work.wait(lock, [&] { return next < jobs.size() || stop; });
      if (stop) return;
      Job* job = jobs[next].get();  // stays put: only the reader pops, and only finished jobs
      lock.unlock();
      // An exception must not leave this thread (it would end the process): a digest that could not
      // be made (no memory for it) leaves the payload unchecked, and says so.
      bool ok = true, checked = true;
      try {
        ok = md5_hex(job->payload) == job->expected;
      } catch (...) {
        checked = false;
      }
      lock.lock();
      job->ok = ok;
      job->checked = checked;
      job->done = true;
      pending_bytes -= job->payload.size();
      ++next;
      finished.notify_all();
    }
  }
  // Queues a payload; returns its id.
  uint64_t submit(std::unique_ptr<Job> job) {
    std::unique_lock<std::mutex> lock(m);
    finished.wait(lock, [&] { return pending_bytes < kPendingMd5Bytes; });
    job->id = ++last_id;
    pending_bytes += job->payload.size();
    bool idle = next == jobs.size();
    jobs.push_back(std::move(job));
    lock.unlock();
    if (idle) work.notify_one();
    return last_id;
  }
  // Waits until every job up to `id` is hashed; notes their mismatches in order. Returns the
  // digest check of job `id` (true when no such job is queued).
  bool settle_until(uint64_t id, ImportTally& tally) {
    std::unique_lock<std::mutex> lock(m);
    bool ok = true;
    for (auto& job : jobs) {
      if (job->id > id) break;
      finished.wait(lock, [&] { return job->done; });
      if (!job->noted) {
        job->noted = true;
        if (!job->ok) tally.note_at(job->note_at, "payload MD5 mismatch", job->example);
        if (!job->checked)
          tally.note_at(job->note_at, "payload MD5 not checked", "no memory left to hash it: " + job->example);
      }
      if (job->id == id) ok = job->ok;
    }
    return ok;
  }
  // Notes what is finished, and frees the jobs before `keep` that are noted.
  void collect(uint64_t keep, ImportTally& tally) {
    std::lock_guard<std::mutex> lock(m);
    for (auto& job : jobs) {
      if (!job->done) break;
      if (!job->noted) {
        job->noted = true;
        if (!job->ok) tally.note_at(job->note_at, "payload MD5 mismatch", job->example);
        if (!job->checked)
          tally.note_at(job->note_at, "payload MD5 not checked", "no memory left to hash it: " + job->example);
      }
    }
    while (!jobs.empty() && jobs.front()->noted && jobs.front()->id != keep) {
      jobs.pop_front();
      --next;
    }
  }
};

bool TraceRecord::intact() const { return md5_pending && reader_ ? reader_->settle_md5(md5_job_) : md5_ok; }

TorchTraceReader::TorchTraceReader(ByteSource& source, ImportTally& tally, TraceReaderOptions options)
    : source_(source), tally_(tally), options_(options), lines_(source, options.max_line_bytes) {}

TorchTraceReader::~TorchTraceReader() = default;  // the worker finishes its job before it goes

bool TorchTraceReader::settle_md5(uint64_t job) { return md5_worker_->settle_until(job, tally_); }

bool TorchTraceReader::start_md5_worker() {
  if (md5_worker_) return true;
  if (md5_worker_failed_) return false;
  try {
    md5_worker_ = std::make_unique<Md5Worker>();
  } catch (const std::exception&) {  // no thread (or memory) to be had: hash on this one
    md5_worker_failed_ = true;
  }
  return md5_worker_ != nullptr;
}

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
  if (md5_worker_) md5_worker_->collect(0, tally_);  // the record last returned is done with
  record.md5_pending = false;
  record.reader_ = nullptr;
  std::string_view line;
  while (true) {
    // Find a header: the one left over from the previous call, or the next one in the input.
    if (header_line_ == 0) {
      if (!read_line(line)) {
        if (md5_worker_) md5_worker_->settle_until(UINT64_MAX, tally_);  // every note in before the end
        return false;
      }
      if (line.empty()) continue;
      if (line[0] == '\t') {
        tally_.note("payload line outside a record", trace_line_example(lines_.line_number(), line));
        continue;
      }
      size_t at;
      int64_t t;
      if (!parse_glog_header(line, &at, &t)) {
        tally_.note("unknown line", trace_line_example(lines_.line_number(), line));
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
      tally_.note("corrupt JSON", trace_line_example(this_line, json) + (error.empty() ? "" : "  (" + error + ")"));

    // `json` views header_, which the loop below overwrites with the next header: the line moves to
    // envelope_text_ (no copy), and the MD5 note's example is taken now.
    envelope_text_.swap(header_);
    if (header_.capacity() > kKeptBufferBytes) std::string().swap(header_);  // an earlier large header's
    json = std::string_view(envelope_text_).substr(json_at);
    std::string json_example = trace_line_example(this_line, json);
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
      tally_.note("unknown line", trace_line_example(lines_.line_number(), line));
    }
    if (!parsed) continue;  // its payload, if any, went with it

    record.line = this_line;
    record.log_time_ns = t_ns;
    record.envelope_text = json;
    record.payload = payload_;
    record.has_payload = any_payload && oversized == 0;
    record.md5_checked = false;
    record.md5_ok = true;
    record.md5_expected = {};
    if (oversized > 0) {
      tally_.note("oversized payload skipped", json_example + "  (over " + std::to_string(oversized) +
                                                   " bytes; the limit is " +
                                                   std::to_string(options_.max_payload_bytes) + ")");
      record.payload = {};
    }
    JsonValue expected = record.envelope["has_payload"];
    if (oversized == 0 && options_.verify_md5 && expected.is_string()) {
      record.md5_checked = true;
      if (options_.md5_by_caller) {
        record.md5_expected = expected.str();
        return true;
      }
      if (options_.md5_in_background && payload_.size() >= kBackgroundMd5Bytes && start_md5_worker()) {
        auto job = std::make_unique<Md5Worker::Job>();
        job->payload = std::move(payload_);  // its bytes stay where record.payload views them
        job->expected = std::string(expected.str());
        job->example = std::move(json_example);
        job->note_at = tally_.size();
        record.payload = job->payload;
        record.md5_job_ = md5_worker_->submit(std::move(job));
        record.md5_pending = true;
        record.reader_ = this;
        payload_ = std::string();
        return true;
      }
      record.md5_ok = md5_hex(payload_) == expected.str();
      if (!record.md5_ok) {
        // A queued record's mismatch comes first in the tally (a rare wait: damaged logs only).
        if (md5_worker_) md5_worker_->settle_until(UINT64_MAX, tally_);
        tally_.note("payload MD5 mismatch", json_example);
      }
    }
    return true;
  }
}

}  // namespace kiln::importers
