#include "engine/base/kernel_cache.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <set>

#include "engine/base/error.h"
#include "engine/base/output_file.h"
#include "engine/base/sha256.h"

namespace kiln {

namespace fs = std::filesystem;

namespace {

std::string errno_text() { return std::strerror(errno); }

std::string octal_mode(mode_t m) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(m & 07777));
  return buf;
}

// Creates `dir` (0700) if absent; then insists it is a real directory of ours that only we can write.
void ensure_private_dir(const fs::path& dir) {
  if (::mkdir(dir.c_str(), 0700) == 0) {
    ::chmod(dir.c_str(), 0700);  // whatever the umask
  } else if (errno != EEXIST) {
    throw Error(dir.string() + ": cannot create the kernel cache folder (" + errno_text() + ")");
  }
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0)
    throw Error(dir.string() + ": cannot read the kernel cache folder (" + errno_text() + ")");
  if (S_ISLNK(st.st_mode))
    throw Error(dir.string() + ": the kernel cache folder is a symbolic link; refusing to load kernels through it");
  if (!S_ISDIR(st.st_mode)) throw Error(dir.string() + ": the kernel cache path is not a folder");
  if (st.st_uid != ::geteuid())
    throw Error(dir.string() + ": the kernel cache folder belongs to uid " + std::to_string(st.st_uid) +
                ", not to this user (uid " + std::to_string(::geteuid()) +
                "); refusing to load kernels from it (set KILN_CACHE_DIR to a folder of your own)");
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    throw Error(dir.string() + ": the kernel cache folder is writable by other users (mode " + octal_mode(st.st_mode) +
                "); refusing to load kernels from it (chmod 700 it, or set KILN_CACHE_DIR)");
}

// Creates the parents of the root that do not exist yet (0700: they are ours, e.g. ~/.cache).
void ensure_parents(const fs::path& root) {
  fs::path parent = root.parent_path();
  if (parent.empty() || fs::exists(parent)) return;
  ensure_parents(parent);
  if (::mkdir(parent.c_str(), 0700) != 0 && errno != EEXIST)
    throw Error(parent.string() + ": cannot create the kernel cache folder's parent (" + errno_text() + ")");
}

fs::path hash_path(const fs::path& entry) { return fs::path(entry.string() + ".sha256"); }

// Reads a cache file through one descriptor after checking what the descriptor refers to.
std::optional<std::string> read_trusted(const fs::path& path, std::string& why, struct stat* identity = nullptr) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno != ENOENT) why = path.string() + ": cannot open (" + errno_text() + ")";
    return std::nullopt;
  }
  struct stat st;
  std::optional<std::string> out;
  if (::fstat(fd, &st) != 0) {
    why = path.string() + ": cannot stat (" + errno_text() + ")";
  } else if (!S_ISREG(st.st_mode)) {
    why = path.string() + ": not a regular file";
  } else if (st.st_uid != ::geteuid()) {
    why = path.string() + ": owned by uid " + std::to_string(st.st_uid) + ", not this user";
  } else if (st.st_mode & (S_IWGRP | S_IWOTH)) {
    why = path.string() + ": writable by other users (mode " + octal_mode(st.st_mode) + ")";
  } else {
    std::string bytes(static_cast<size_t>(st.st_size), '\0');
    size_t got = 0;
    while (got < bytes.size()) {
      ssize_t n = ::read(fd, bytes.data() + got, bytes.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    if (got != bytes.size()) why = path.string() + ": short read";
    else out = std::move(bytes);
    if (identity) *identity = st;
  }
  ::close(fd);
  return out;
}

}  // namespace

std::string kernel_cache_root() {
  if (const char* d = std::getenv("KILN_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/kiln";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/kiln";
  return "/tmp/kiln-cache-" + std::to_string(::geteuid());
}

fs::path open_kernel_cache(const std::string& subfolder) {
  fs::path root = fs::path(kernel_cache_root());
  if (root.is_relative()) root = fs::absolute(root);
  ensure_parents(root);
  ensure_private_dir(root);
  fs::path dir = root / subfolder;
  ensure_private_dir(dir);
  static std::mutex swept_mutex;
  static std::set<std::string> swept;  // each folder is swept once per process
  std::lock_guard<std::mutex> lock(swept_mutex);
  if (swept.insert(dir.string()).second) remove_stale_temporaries(dir.string());
  return dir;
}

void cache_store(const fs::path& entry, const std::string& bytes) {
  // The hash goes in first: an entry without a matching hash is a miss, never a load.
  write_file_atomically(hash_path(entry).string(), sha256_hex(bytes) + "\n");
  write_file_atomically(entry.string(), bytes);
}

void cache_adopt(const fs::path& finished, const fs::path& entry) {
  std::string why;
  auto bytes = read_trusted(finished, why);
  if (!bytes) {
    std::error_code ec;
    fs::remove(finished, ec);
    throw Error(finished.string() + ": cannot read the compiled kernel" + (why.empty() ? "" : " (" + why + ")"));
  }
  write_file_atomically(hash_path(entry).string(), sha256_hex(*bytes) + "\n");
  if (::rename(finished.c_str(), entry.c_str()) != 0) {
    int saved = errno;
    ::unlink(finished.c_str());
    throw Error(entry.string() + ": cannot place the kernel cache entry (" + std::strerror(saved) + ")");
  }
}

CacheLoad cache_load_verified(const fs::path& entry) {
  CacheLoad out;
  std::string why;
  struct stat identity {};
  auto bytes = read_trusted(entry, why, &identity);
  if (!bytes) {
    out.why_not = why;
    return out;
  }
  out.device = static_cast<uint64_t>(identity.st_dev);
  out.inode = static_cast<uint64_t>(identity.st_ino);
  auto recorded = read_trusted(hash_path(entry), why);
  if (!recorded) {
    out.why_not = why.empty() ? entry.string() + ": no recorded hash" : why;
    return out;
  }
  std::string expected = recorded->substr(0, recorded->find_first_of(" \n"));
  if (expected != sha256_hex(*bytes)) {
    out.why_not = entry.string() + ": contents do not match the recorded SHA-256";
    return out;
  }
  out.bytes = std::move(bytes);
  return out;
}

void* dlopen_verified(const fs::path& entry, const CacheLoad& verified) {
  auto same_file = [&] {
    struct stat st;
    return ::lstat(entry.c_str(), &st) == 0 && S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_dev) == verified.device &&
           static_cast<uint64_t>(st.st_ino) == verified.inode;
  };
  if (!verified.bytes || !same_file())
    throw Error(entry.string() + ": the kernel library changed after it was verified; refusing to load it");
  void* h = ::dlopen(entry.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = ::dlerror();
    throw Error(entry.string() + ": cannot load the kernel library: " + (e ? e : "unknown error"));
  }
  if (!same_file()) {
    ::dlclose(h);
    throw Error(entry.string() + ": the kernel library changed while it was loaded; refusing to use it");
  }
  return h;
}

}  // namespace kiln
