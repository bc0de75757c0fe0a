// Plain files are read with read(2); gzip files go through zlib's inflate with a 1 MiB input
// window, so neither ever holds the whole file.
#include "engine/importers/common/byte_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "engine/base/error.h"

#if __has_include(<zlib.h>)
#include <zlib.h>
#define KILN_IMPORT_HAVE_ZLIB 1
#endif

namespace kiln::importers {

namespace {

// A failed read is an error naming the file: taken for the end of input, it would cut the import short
// without a word.
[[noreturn]] void read_failed(const std::string& path, int err) {
  throw Error(path + ": cannot read (" + std::strerror(err) + ")");
}

size_t read_fully(int fd, char* buf, size_t n, const std::string& path) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = ::read(fd, buf + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) read_failed(path, errno);
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  return got;
}

}  // namespace

#ifdef KILN_IMPORT_HAVE_ZLIB
struct ByteSource::Inflater {
  z_stream z{};
  std::vector<unsigned char> in = std::vector<unsigned char>(1 << 20);
  bool done = false;
  Inflater() { inflateInit2(&z, 15 + 32); }  // 32: accept gzip and zlib headers
  ~Inflater() { inflateEnd(&z); }
};
#else
struct ByteSource::Inflater {};
#endif

ByteSource::ByteSource(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw Error(path + ": cannot open (" + std::strerror(errno) + ")");
#ifdef POSIX_FADV_SEQUENTIAL
  ::posix_fadvise(fd_, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
  unsigned char magic[2] = {0, 0};
  ssize_t r = ::pread(fd_, magic, 2, 0);
  gzipped_ = r == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  if (gzipped_) {
#ifdef KILN_IMPORT_HAVE_ZLIB
    inflater_ = std::make_unique<Inflater>();
#else
    ::close(fd_);
    fd_ = -1;
    throw Error(path + ": gzip-compressed, but this Kiln was built without zlib; gunzip it first");
#endif
  }
}

ByteSource::~ByteSource() {
  if (fd_ >= 0) ::close(fd_);
}

uint64_t ByteSource::bytes_read() const { return raw_bytes_; }

int64_t ByteSource::plain_size() const {
  struct stat st {};
  if (gzipped_ || fd_ < 0 || ::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) return -1;
  return static_cast<int64_t>(st.st_size);
}

size_t ByteSource::read_at(uint64_t offset, char* buf, size_t n) const {
  size_t got = 0;
  while (got < n) {
    ssize_t r = ::pread(fd_, buf + got, n - got, static_cast<off_t>(offset + got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) read_failed(path_, errno);
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  return got;
}

size_t ByteSource::read(char* buf, size_t n) {
  if (n == 0) return 0;
  if (!gzipped_) {
    size_t got = read_fully(fd_, buf, n, path_);
    raw_bytes_ += got;
    return got;
  }
#ifdef KILN_IMPORT_HAVE_ZLIB
  auto& f = *inflater_;
  if (f.done) return 0;
  f.z.next_out = reinterpret_cast<Bytef*>(buf);
  f.z.avail_out = static_cast<uInt>(n);
  while (f.z.avail_out > 0) {
    if (f.z.avail_in == 0) {
      size_t got = read_fully(fd_, reinterpret_cast<char*>(f.in.data()), f.in.size(), path_);
      raw_bytes_ += got;
      if (got == 0) {  // the file ended before the gzip stream did
        truncated_ = true;
        f.done = true;
        break;
      }
      f.z.next_in = f.in.data();
      f.z.avail_in = static_cast<uInt>(got);
    }
    int rc = inflate(&f.z, Z_NO_FLUSH);
    if (rc == Z_STREAM_END) {
      // Concatenated gzip members (gzip -c a >> b) are one stream to the reader.
      if (f.z.avail_in == 0) {
        char probe;
        if (read_fully(fd_, &probe, 1, path_) == 0) {
          f.done = true;
          break;
        }
        raw_bytes_ += 1;
        f.in[0] = static_cast<unsigned char>(probe);
        f.z.next_in = f.in.data();
        f.z.avail_in = 1;
      }
      inflateReset(&f.z);
      continue;
    }
    if (rc == Z_BUF_ERROR && f.z.avail_in == 0) continue;  // needs more input
    if (rc != Z_OK) {
      truncated_ = true;
      f.done = true;
      break;
    }
  }
  return n - f.z.avail_out;
#else
  return 0;
#endif
}

bool is_gzip_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  unsigned char magic[2] = {0, 0};
  ssize_t r = ::pread(fd, magic, 2, 0);
  ::close(fd);
  return r == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
}

}  // namespace kiln::importers
