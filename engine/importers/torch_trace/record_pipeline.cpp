// The records travel in batches (a lock taken per batch, not per record); a batch the caller is done
// with goes back to the reading thread, its strings' storage reused for the next records.
#include "engine/importers/torch_trace/record_pipeline.h"

#include <utility>

#include "engine/importers/common/md5.h"

namespace kiln::importers {

namespace {

constexpr size_t kBatchRecords = 64;
constexpr size_t kBatchBytes = size_t(1) << 20;
constexpr size_t kInFlightBytes = size_t(16) << 20;  // the reader waits past this
constexpr size_t kFreeBatches = 4;
// A released record's payload storage is kept for reuse up to this size: storage only grows, and
// every buffer in circulation would otherwise come to hold the largest payload it ever carried.
constexpr size_t kKeptBufferBytes = size_t(64) << 10;

}  // namespace

struct TraceRecordPipeline::Batch {
  struct Record {
    int64_t line = 0;
    int64_t log_time_ns = -1;
    std::string envelope;  // the envelope's JSON text
    std::string payload;
    std::string md5_expected;
    bool has_payload = false, md5_checked = false, md5_ok = true;
    ImportTally notes;  // made while reading it (and checking its digest), in order
  };
  std::vector<Record> records;  // the first `count` are this batch's
  size_t count = 0;
  size_t bytes = 0;
  bool end = false;            // the last batch: the input ends (or reading failed) after it
  ImportTally end_notes;       // made after the last record
};

TraceRecordPipeline::TraceRecordPipeline(ByteSource& source, ImportTally& tally, TraceReaderOptions options)
    : source_(source), tally_(tally), options_(options) {
  options_.md5_in_background = false;
  options_.md5_by_caller = options_.verify_md5;
  if (options_.verify_md5) {
    try {
      hasher_ = std::thread([this] { hash_all(); });
    } catch (const std::exception&) {
      hash_inline_ = true;
    }
  }
  try {
    reader_ = std::thread([this] { read_all(); });
  } catch (const std::exception&) {
    if (hasher_.joinable()) {
      {
        std::lock_guard<std::mutex> lock(m_);
        stop_ = true;
      }
      work_.notify_all();
      hasher_.join();
    }
    TraceReaderOptions serial = options;
    serial.md5_in_background = true;
    serial_ = std::make_unique<TorchTraceReader>(source_, tally_, serial);
  }
}

TraceRecordPipeline::~TraceRecordPipeline() {
  {
    std::lock_guard<std::mutex> lock(m_);
    stop_ = true;
  }
  space_.notify_all();
  work_.notify_all();
  if (reader_.joinable()) reader_.join();
  if (hasher_.joinable()) hasher_.join();
}

int64_t TraceRecordPipeline::pid() const { return serial_ ? serial_->pid() : pid_; }

std::unique_ptr<TraceRecordPipeline::Batch> TraceRecordPipeline::fresh_batch() {
  std::unique_ptr<Batch> b;
  {
    std::lock_guard<std::mutex> lock(m_);
    if (!free_.empty()) {
      b = std::move(free_.back());
      free_.pop_back();
    }
  }
  if (!b) b = std::make_unique<Batch>();
  b->count = 0;
  b->bytes = 0;
  b->end = false;
  b->end_notes = ImportTally();
  return b;
}

void TraceRecordPipeline::release(std::unique_ptr<Batch> b) {
  for (size_t i = 0; i < b->count; ++i) {
    auto& r = b->records[i];
    if (r.payload.capacity() > kKeptBufferBytes) std::string().swap(r.payload);
    if (r.notes.size()) r.notes = ImportTally();
  }
  std::lock_guard<std::mutex> lock(m_);
  in_flight_ -= b->bytes;
  if (free_.size() < kFreeBatches) free_.push_back(std::move(b));
  space_.notify_all();
}

void TraceRecordPipeline::push(std::unique_ptr<Batch> b) {
  if (hash_inline_) hash(*b);
  {
    std::lock_guard<std::mutex> lock(m_);
    in_flight_ += b->bytes;
    queue_.push_back(std::move(b));
    if (!options_.verify_md5 || hash_inline_) ++hashed_;
  }
  ready_.notify_all();
  work_.notify_all();
}

void TraceRecordPipeline::read_all() {
  std::unique_ptr<Batch> b;
  try {
    ImportTally notes;  // what the reader notes for the record it is on
    TorchTraceReader reader(source_, notes, options_);
    TraceRecord record;
    b = fresh_batch();
    while (true) {
      if (b->count == 0) {  // a new batch: wait while enough is read ahead
        std::unique_lock<std::mutex> lock(m_);
        space_.wait(lock, [&] { return in_flight_ < kInFlightBytes || stop_; });
        if (stop_) return;
      }
      if (!reader.next(record)) {
        b->end_notes = std::move(notes);
        b->end = true;
        {
          std::lock_guard<std::mutex> lock(m_);
          pid_ = reader.pid();
        }
        push(std::move(b));
        return;
      }
      if (b->records.size() == b->count) b->records.emplace_back();
      auto& r = b->records[b->count++];
      r.line = record.line;
      r.log_time_ns = record.log_time_ns;
      r.envelope.assign(record.envelope_text.data(), record.envelope_text.size());
      r.payload.clear();
      reader.swap_payload(r.payload);  // the payload changes hands; the reader reuses r's storage
      r.has_payload = record.has_payload;
      r.md5_checked = record.md5_checked;
      r.md5_ok = true;
      r.md5_expected.assign(record.md5_expected.data(), record.md5_expected.size());
      if (notes.size()) {
        r.notes = std::move(notes);
        notes = ImportTally();
      }
      b->bytes += sizeof r + r.payload.capacity() + r.envelope.capacity() + r.md5_expected.capacity();
      if (b->count >= kBatchRecords || b->bytes >= kBatchBytes) {
        push(std::move(b));
        b = fresh_batch();
      }
    }
  } catch (...) {
    // The import fails with it: the records not handed over yet no longer matter.
    {
      std::lock_guard<std::mutex> lock(m_);
      error_ = std::current_exception();
    }
    ready_.notify_all();
  }
}

void TraceRecordPipeline::hash(Batch& b) {
  for (size_t i = 0; i < b.count; ++i) {
    auto& r = b.records[i];
    if (!r.md5_checked) continue;
    try {
      r.md5_ok = md5_hex(r.payload) == r.md5_expected;
      if (!r.md5_ok) r.notes.note("payload MD5 mismatch", trace_line_example(r.line, r.envelope));
    } catch (...) {  // no memory to hash it: unchecked, and said so
      r.md5_ok = true;
      try {
        r.notes.note("payload MD5 not checked", "no memory left to hash it: " + trace_line_example(r.line, r.envelope));
      } catch (...) {
      }
    }
  }
}

void TraceRecordPipeline::hash_all() {
  std::unique_lock<std::mutex> lock(m_);
  while (true) {
    work_.wait(lock, [&] { return hashed_ < queue_.size() || stop_; });
    if (stop_) return;
    Batch* b = queue_[hashed_].get();  // stays put: the caller pops only hashed batches
    lock.unlock();
    hash(*b);
    lock.lock();
    ++hashed_;
    ready_.notify_all();
  }
}

bool TraceRecordPipeline::next(TraceRecord& record) {
  if (serial_) return serial_->next(record);
  while (true) {
    if (done_) return false;
    if (current_ && at_ < current_->count) {
      auto& r = current_->records[at_++];
      if (r.notes.size()) tally_.append(r.notes);
      std::string error;
      if (!parser_.parse(r.envelope, record.envelope, &error)) {
        // It parsed on the reading thread: only a failure to allocate gets here.
        tally_.note("corrupt JSON", trace_line_example(r.line, r.envelope) + "  (" + error + ")");
        continue;
      }
      record.line = r.line;
      record.log_time_ns = r.log_time_ns;
      record.envelope_text = r.envelope;
      record.payload = r.payload;
      record.has_payload = r.has_payload;
      record.md5_checked = r.md5_checked;
      record.md5_ok = r.md5_ok;
      record.md5_pending = false;
      record.md5_expected = r.md5_expected;
      return true;
    }
    if (current_) {
      if (current_->end) {
        done_ = true;
        tally_.append(current_->end_notes);
        release(std::move(current_));
        return false;
      }
      release(std::move(current_));
    }
    std::unique_lock<std::mutex> lock(m_);
    ready_.wait(lock, [&] { return hashed_ > 0 || error_; });
    if (error_) std::rethrow_exception(error_);
    current_ = std::move(queue_.front());
    queue_.pop_front();
    --hashed_;
    at_ = 0;
  }
}

}  // namespace kiln::importers
