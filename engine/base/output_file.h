// Writing what a command produces without ever losing what was there before.
//
// write_file_atomically(path, text)
//   post: path holds exactly text, or (on any failure) what it held before and an Error names it.
//         The text goes to a temporary beside it (path.tmp-<pid>-<n>); every write, the fsync and
//         the close are checked before the rename. An existing target that is not a regular file
//         (/dev/stdout, a FIFO) is written in place, each write checked.
// AtomicOutputFile(path): the same, written piece by piece (a report streamed from a session):
//   write() appends to the temporary (buffered; every write checked, the first failure throws
//   "<path>: writing failed (why); the previous file is kept" and removes the temporary); commit()
//   flushes, fsyncs, closes and renames it into place. Destroyed without commit(), the temporary is
//   removed and path keeps what it held. A target that is not a regular file is written in place.
// OutputSink: where a streamed text goes (a file, a string, standard output); write() throws
//   kiln::Error on failure.
// fsync_path(path): flushes a finished file to disk; throws naming it when the disk refuses.
// refuse_input_as_output(output, inputs)
//   error: "<output>: is also an input of this command; refusing to overwrite it" when output
//          names the same file as one of inputs (through links or other spellings too).
// OutputLock: an exclusive lock on an output path for the life of the object (flock on
//   path + ".lock", removed when released). A second writer, in this process or another, fails at
//   once with "<path>: being written by another Kiln process (pid N); try again when it finishes".
//   An existing target that is not a regular file (a device, a FIFO) is not locked. When the lock
//   file cannot be made, the error reads "<path>: <failure> (cannot create <path>.lock: why)".
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

void write_file_atomically(const std::string& path, const std::string& text);

class OutputSink {
 public:
  virtual ~OutputSink() = default;
  virtual void write(std::string_view text) = 0;
};

// Appends to a string.
class StringSink : public OutputSink {
 public:
  explicit StringSink(std::string& out) : out_(out) {}
  void write(std::string_view text) override { out_.append(text); }

 private:
  std::string& out_;
};

class AtomicOutputFile : public OutputSink {
 public:
  explicit AtomicOutputFile(const std::string& path);
  ~AtomicOutputFile() override;
  AtomicOutputFile(const AtomicOutputFile&) = delete;
  AtomicOutputFile& operator=(const AtomicOutputFile&) = delete;
  void write(std::string_view text) override;
  void commit();

 private:
  void flush();
  [[noreturn]] void fail(int err);
  std::string path_, tmp_;  // tmp_ empty: written in place
  int fd_ = -1;
  std::string buffer_;
};
// A fresh temporary name beside `path`: path.tmp-<pid>-<n><suffix>, unique in this process.
std::string temporary_beside(const std::string& path, const std::string& suffix = "");
// Removes the temporaries in `dir` named `prefix`.tmp-<pid>... (any name holding .tmp-<pid> when
// prefix is empty) whose process no longer runs: what a killed writer left behind.
void remove_stale_temporaries(const std::string& dir, const std::string& prefix = "");
// Writes all of data to fd (retrying short writes and EINTR); false with errno set on failure.
bool write_fully(int fd, const char* data, size_t size);
void fsync_path(const std::string& path);
// Removes path and, for a folder, everything under it (links removed, never followed); a missing path
// is fine. Returns false when something could not be removed. Used instead of
// std::filesystem::remove_all, which jumps to address 0 on a non-empty folder in programs linked
// with the torch wheel's LibTorch (its libtorch.so carries a copy of those functions that takes
// their calls: seen with GCC 13 and torch 2.11).
bool remove_tree(const std::string& path);
void refuse_input_as_output(const std::string& output, const std::vector<std::string>& inputs);

class OutputLock {
 public:
  explicit OutputLock(const std::string& path, const std::string& failure = "cannot write");
  ~OutputLock();
  OutputLock(const OutputLock&) = delete;
  OutputLock& operator=(const OutputLock&) = delete;

 private:
  std::string lock_path_;
  int fd_ = -1;
};

}  // namespace kiln
