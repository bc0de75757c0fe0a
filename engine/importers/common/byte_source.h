// ByteSource: the bytes of one input file, read in chunks, gunzipped on the fly when the file
// starts with the gzip magic (needs zlib; without it a gzip file is an Error naming it).
//
// ByteSource(path)
//   error: kiln::Error naming the file when it cannot be opened.
// read(buf, n)
//   post: fills up to n bytes, returns how many; 0 at the end. A gzip stream cut short or
//         corrupt ends early: truncated() then says so (the bytes before the damage are kept).
//   error: kiln::Error naming the file when reading fails (an I/O error, a directory): never taken
//          for the end of input.
// bytes_read(): compressed (on-disk) bytes consumed so far, for progress and MB/s figures.
// plain_size(): the size of a regular file that is not gzipped (its bytes are the input as they
//   are), else -1. read_at(offset, buf, n), for such a file only: up to n bytes at offset without
//   moving read()'s position (safe from another thread); 0 at the end; errors as read(). Not counted in
//   bytes_read().
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace kiln::importers {

class ByteSource {
 public:
  explicit ByteSource(const std::string& path);
  ~ByteSource();
  ByteSource(const ByteSource&) = delete;
  ByteSource& operator=(const ByteSource&) = delete;

  size_t read(char* buf, size_t n);
  bool gzipped() const { return gzipped_; }
  int64_t plain_size() const;
  size_t read_at(uint64_t offset, char* buf, size_t n) const;
  bool truncated() const { return truncated_; }
  uint64_t bytes_read() const;
  const std::string& path() const { return path_; }

 private:
  struct Inflater;
  std::string path_;
  int fd_ = -1;
  bool gzipped_ = false;
  bool truncated_ = false;
  uint64_t raw_bytes_ = 0;
  std::unique_ptr<Inflater> inflater_;
};

// True when the file starts with the gzip magic bytes (1f 8b).
bool is_gzip_file(const std::string& path);

}  // namespace kiln::importers
