#include "engine/base/output_file.h"

#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "engine/base/error.h"

namespace kiln {

namespace fs = std::filesystem;

namespace {

// strerror, with the likely cause named where a user would not guess it.
std::string reason(int err) {
  std::string r = std::strerror(err);
  if (err == ENOSPC || err == EFBIG || err == EDQUOT) r += ": disk full?";
  return r;
}


}  // namespace

std::string temporary_beside(const std::string& path, const std::string& suffix) {
  static std::atomic<unsigned long> counter{0};
  return path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(++counter) + suffix;
}

void remove_stale_temporaries(const std::string& dir, const std::string& prefix) {
  const std::string marker = ".tmp-";
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    // With a prefix, the marker follows it directly ("s.kiln" + ".tmp-<pid>"); without, it may stand anywhere.
    auto at = prefix.empty() ? name.find(marker)
                             : (name.compare(prefix.size(), marker.size(), marker) == 0 ? prefix.size() : std::string::npos);
    if (at == std::string::npos) continue;
    long pid = std::strtol(name.c_str() + at + marker.size(), nullptr, 10);
    if (pid > 0 && pid != ::getpid() && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
      std::error_code rm;
      fs::remove(it->path(), rm);
    }
  }
}

bool write_fully(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    if (n == 0) {
      errno = ENOSPC;
      return false;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

void write_file_atomically(const std::string& path, const std::string& text) {
  AtomicOutputFile out(path);
  out.write(text);
  out.commit();
}

namespace {
constexpr size_t kOutputBuffer = 1 << 20;
}  // namespace

AtomicOutputFile::AtomicOutputFile(const std::string& path) : path_(path) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    if (S_ISDIR(st.st_mode)) throw Error(path + ": cannot write (is a folder)");
    fd_ = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd_ < 0) throw Error(path + ": cannot write (" + std::strerror(errno) + ")");
    return;
  }
  tmp_ = temporary_beside(path);
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd_ < 0) throw Error(path + ": cannot write (" + std::string(std::strerror(errno)) + ")");
}

AtomicOutputFile::~AtomicOutputFile() {
  if (fd_ >= 0) ::close(fd_);
  if (fd_ >= 0 && !tmp_.empty()) ::unlink(tmp_.c_str());
}

void AtomicOutputFile::fail(int err) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (tmp_.empty()) throw Error(path_ + ": writing failed (" + reason(err) + ")");
  ::unlink(tmp_.c_str());
  throw Error(path_ + ": writing failed (" + reason(err) + "); the previous file is kept");
}

void AtomicOutputFile::flush() {
  if (fd_ < 0) throw Error(path_ + ": writing failed (the file is closed)");
  if (!write_fully(fd_, buffer_.data(), buffer_.size())) fail(errno);
  buffer_.clear();
}

void AtomicOutputFile::write(std::string_view text) {
  if (buffer_.size() + text.size() > kOutputBuffer) {
    flush();
    if (text.size() >= kOutputBuffer) {  // large pieces go straight through
      if (!write_fully(fd_, text.data(), text.size())) fail(errno);
      return;
    }
  }
  if (buffer_.capacity() < kOutputBuffer) buffer_.reserve(kOutputBuffer);
  buffer_.append(text);
}

void AtomicOutputFile::commit() {
  flush();
  if (!tmp_.empty() && ::fsync(fd_) != 0) fail(errno);
  int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    int saved = errno;
    if (tmp_.empty()) throw Error(path_ + ": writing failed (" + reason(saved) + ")");
    ::unlink(tmp_.c_str());
    throw Error(path_ + ": writing failed (" + reason(saved) + "); the previous file is kept");
  }
  if (tmp_.empty()) return;
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
    int saved = errno;
    ::unlink(tmp_.c_str());
    throw Error(path_ + ": cannot write (" + std::strerror(saved) + ")");
  }
}

bool remove_tree(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return errno == ENOENT;
  if (!S_ISDIR(st.st_mode)) return ::unlink(path.c_str()) == 0 || errno == ENOENT;
  // Deepest first; FTW_PHYS: a link is removed as a link. Each failure is counted, the walk goes on.
  static thread_local int failures;
  failures = 0;
  const int rc = ::nftw(
      path.c_str(),
      [](const char* p, const struct stat*, int kind, struct FTW*) {
        const int removed = kind == FTW_DP ? ::rmdir(p) : ::unlink(p);
        if (removed != 0 && errno != ENOENT) ++failures;
        return 0;
      },
      32, FTW_DEPTH | FTW_PHYS);
  return rc == 0 && failures == 0;
}

void fsync_path(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(path + ": cannot reopen to flush (" + std::strerror(errno) + ")");
  bool ok = ::fsync(fd) == 0;
  int saved = errno;
  ::close(fd);
  if (!ok) throw Error(path + ": flushing to disk failed (" + reason(saved) + ")");
}

void refuse_input_as_output(const std::string& output, const std::vector<std::string>& inputs) {
  std::error_code ec;
  if (!fs::exists(output, ec)) return;  // a new file cannot be an existing input
  for (const auto& in : inputs) {
    std::error_code e2;
    if (fs::exists(in, e2) && fs::equivalent(output, in, e2) && !e2)
      throw Error(output + ": is also an input of this command (" + in + "); refusing to overwrite it");
  }
}

OutputLock::OutputLock(const std::string& path, const std::string& failure) : lock_path_(path + ".lock") {
  // Devices and pipes (/dev/stdout, a FIFO) are written in place: there is no file to protect.
  struct stat target;
  if (::stat(path.c_str(), &target) == 0 && !S_ISREG(target.st_mode)) return;
  // A lock file may be unlinked by its holder between our open and our flock: retry on a new one.
  for (int attempt = 0; attempt < 8; ++attempt) {
    fd_ = ::open(lock_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd_ < 0)
      throw Error(path + ": " + failure + " (cannot create " + lock_path_ + ": " + std::strerror(errno) + ")");
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      int saved = errno;
      char buf[32] = {};
      ssize_t n = ::pread(fd_, buf, sizeof buf - 1, 0);
      ::close(fd_);
      fd_ = -1;
      if (saved != EWOULDBLOCK) throw Error(path + ": " + failure + " (cannot lock it: " + std::strerror(saved) + ")");
      std::string holder = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
      while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
      throw Error(path + ": being written by another Kiln process" + (holder.empty() ? "" : " (pid " + holder + ")") +
                  "; try again when it finishes");
    }
    struct stat held, now;
    if (::fstat(fd_, &held) == 0 && ::stat(lock_path_.c_str(), &now) == 0 && held.st_ino == now.st_ino &&
        held.st_dev == now.st_dev) {
      std::string pid = std::to_string(::getpid()) + "\n";
      if (::ftruncate(fd_, 0) == 0) (void)!::pwrite(fd_, pid.data(), pid.size(), 0);
      return;
    }
    ::close(fd_);
    fd_ = -1;
  }
  throw Error(path + ": " + failure + " (its lock file keeps changing)");
}

OutputLock::~OutputLock() {
  if (fd_ < 0) return;
  ::unlink(lock_path_.c_str());  // while still holding it: a waiter re-checks the inode
  ::close(fd_);
}

}  // namespace kiln
