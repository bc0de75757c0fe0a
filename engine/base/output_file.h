// Writing what a command produces without ever losing what was there before.
//
// write_file_atomically(path, text)
//   post: path holds exactly text, or (on any failure) what it held before and an Error names it.
//         The text goes to a temporary beside it (path.tmp-<pid>-<n>); every write, the fsync and
//         the close are checked before the rename. An existing target that is not a regular file
//         (/dev/stdout, a FIFO) is written in place, each write checked.
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
#include <vector>

namespace kiln {

void write_file_atomically(const std::string& path, const std::string& text);
// A fresh temporary name beside `path`: path.tmp-<pid>-<n><suffix>, unique in this process.
std::string temporary_beside(const std::string& path, const std::string& suffix = "");
// Removes the temporaries in `dir` named `prefix`.tmp-<pid>... (any name holding .tmp-<pid> when
// prefix is empty) whose process no longer runs: what a killed writer left behind.
void remove_stale_temporaries(const std::string& dir, const std::string& prefix = "");
// Writes all of data to fd (retrying short writes and EINTR); false with errno set on failure.
bool write_fully(int fd, const char* data, size_t size);
void fsync_path(const std::string& path);
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
