// TraceRecordPipeline: TorchTraceReader's records read ahead on other threads while the caller
// builds the session from the ones already read. One thread reads lines, splits records and parses
// their envelopes; a second checks payload digests (with verify_md5); the caller's thread gets the
// records in file order, each with the notes its reading made, as if it had read them itself.
//
// TraceRecordPipeline(source, tally, options)
//   Starts the threads. When no thread can be started the records are read on the caller's thread
//   (digests of large payloads on a second one when it can be had): the same records, the same notes.
// next(record)
//   post: as TorchTraceReader::next: true with the next record (md5_ok known, never pending); false
//         at the end of input. The notes reading made up to this record are in the tally, in the
//         order a TorchTraceReader on the same tally would have made them. The record's views stay
//         valid until the next call.
//   error: what reading threw (kiln::Error, std::bad_alloc, ...) is thrown here, at the latest at
//          the record where the reader threw it (the import fails with it).
// pid(): as TorchTraceReader::pid(), once next() has returned false.
//
// Memory: besides the record being read and the one the caller holds, at most about 16 MiB of
// records wait between the threads (one larger record waits alone).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/importers/common/byte_source.h"
#include "engine/importers/common/import_notes.h"
#include "engine/importers/common/json_doc.h"
#include "engine/importers/torch_trace/torch_trace_records.h"

namespace kiln::importers {

class TraceRecordPipeline {
 public:
  TraceRecordPipeline(ByteSource& source, ImportTally& tally, TraceReaderOptions options);
  ~TraceRecordPipeline();
  TraceRecordPipeline(const TraceRecordPipeline&) = delete;
  TraceRecordPipeline& operator=(const TraceRecordPipeline&) = delete;

  bool next(TraceRecord& record);
  int64_t pid() const;
  bool threaded() const { return serial_ == nullptr; }

 private:
  struct Batch;
  void read_all();                 // the reading thread
  void hash_all();                 // the digest thread
  void hash(Batch& batch);
  void push(std::unique_ptr<Batch> batch);
  std::unique_ptr<Batch> fresh_batch();
  void release(std::unique_ptr<Batch> batch);

  ByteSource& source_;
  ImportTally& tally_;
  TraceReaderOptions options_;
  std::unique_ptr<TorchTraceReader> serial_;  // when no thread could be started

  std::mutex m_;
  std::condition_variable space_, ready_, work_;
  std::deque<std::unique_ptr<Batch>> queue_;  // read, in file order
  size_t hashed_ = 0;                          // the first hashed_ batches of queue_ are checked
  std::vector<std::unique_ptr<Batch>> free_;   // released, for their buffers
  size_t in_flight_ = 0;                       // bytes the records in queue_ hold
  bool stop_ = false;
  std::exception_ptr error_;                   // what the reading thread threw
  bool hash_inline_ = false;                   // no digest thread: the reading thread hashes
  int64_t pid_ = -1;

  // The caller's side.
  std::unique_ptr<Batch> current_;
  size_t at_ = 0;
  bool done_ = false;
  JsonParser parser_;

  std::thread hasher_, reader_;  // last: started once the members above exist
};

}  // namespace kiln::importers
