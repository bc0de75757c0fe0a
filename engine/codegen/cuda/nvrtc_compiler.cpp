#include "engine/codegen/cuda/nvrtc_compiler.h"

#include <nvrtc.h>

#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <sstream>
#include <thread>

#include "engine/base/error.h"
#include "engine/base/kernel_cache.h"
#include "engine/base/sha256.h"

namespace kiln::codegen {

namespace fs = std::filesystem;

std::string nvrtc_version() {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return "unknown";
  return std::to_string(major) + "." + std::to_string(minor);
}

namespace {

void check(nvrtcResult r, const char* what) {
  if (r != NVRTC_SUCCESS) throw Error(std::string("NVRTC ") + what + " failed: " + nvrtcGetErrorString(r));
}

}  // namespace

namespace {

// NVRTC runs one compile at a time per process anyway; the lock also keeps every Kiln thread out of
// NVRTC while compile_cuda_units forks, so no worker starts with NVRTC's own state held by a thread
// that does not exist in it.
std::mutex& nvrtc_mutex() {
  static std::mutex m;
  return m;
}

std::string cache_key(const std::string& source, const std::string& arch) {
  return sha256_hex(source + "\n" + arch + "\n" + nvrtc_version()).substr(0, 32);
}

fs::path cache_entry(const std::string& source, const std::string& arch) {
  return open_kernel_cache("cuda") / (cache_key(source, arch) + "." + arch + ".cubin");
}

// The log's errors, each with the source line and caret NVRTC prints under it (warnings come first in
// the log and would otherwise fill the message); the first lines when no line says "error".
std::string first_errors(const std::string& log) {
  std::vector<std::string> lines;
  std::istringstream in(log);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  std::string out;
  int taken = 0;
  for (size_t i = 0; i < lines.size() && taken < 6; ++i) {
    if (lines[i].find(": error") == std::string::npos && lines[i].find("error:") == std::string::npos) continue;
    for (size_t j = i; j < lines.size() && j < i + 3 && taken < 6; ++j, ++taken) {
      if (j > i && lines[j].find(": error") != std::string::npos) break;
      out += (out.empty() ? "" : " | ") + lines[j];
    }
  }
  if (!out.empty()) return out;
  for (size_t i = 0; i < lines.size() && i < 6; ++i) out += (out.empty() ? "" : " | ") + lines[i];
  return out;
}

// NVRTC itself: source to CUBIN. The caller holds nvrtc_mutex (or is a worker with no other thread).
CubinResult nvrtc_compile(const std::string& source, const std::string& arch) {
  CubinResult out;
  auto t0 = std::chrono::steady_clock::now();
  nvrtcProgram prog;
  check(nvrtcCreateProgram(&prog, source.c_str(), "kiln_kernels.cu", 0, nullptr, nullptr), "create");
  std::string arch_opt = "--gpu-architecture=" + arch;
  const char* opts[] = {arch_opt.c_str(), "--std=c++17", "-default-device", "-lineinfo"};
  nvrtcResult r = nvrtcCompileProgram(prog, 4, opts);
  size_t log_size = 0;
  nvrtcGetProgramLogSize(prog, &log_size);
  out.log.resize(log_size);
  if (log_size) nvrtcGetProgramLog(prog, out.log.data());
  while (!out.log.empty() && (out.log.back() == '\0' || out.log.back() == '\n')) out.log.pop_back();
  if (r != NVRTC_SUCCESS) {
    nvrtcDestroyProgram(&prog);
    throw Error("CUDA kernel compilation (NVRTC " + nvrtc_version() + ", " + arch + ") failed: " + first_errors(out.log));
  }
  size_t size = 0;
  check(nvrtcGetCUBINSize(prog, &size), "get CUBIN size");
  out.cubin.resize(size);
  check(nvrtcGetCUBIN(prog, out.cubin.data()), "get CUBIN");
  nvrtcDestroyProgram(&prog);
  out.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

unsigned worker_count(unsigned asked, size_t misses) {
  unsigned n = asked ? asked : std::min(16u, std::max(1u, std::thread::hardware_concurrency()));
  if (const char* env = std::getenv("KILN_NVRTC_WORKERS"); env && *env) {
    char* end = nullptr;
    long v = std::strtol(env, &end, 10);
    if (end && *end == '\0' && v >= 1 && v <= 256) n = static_cast<unsigned>(v);
  }
  return static_cast<unsigned>(std::min<size_t>(n, misses));
}

// A worker's results, written to its anonymous file: per compiled unit, its index, the compile time,
// the CUBIN and NVRTC's log. A unit that failed is left out (this process compiles it again, for the error).
bool write_all(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool write_blob(int fd, const std::string& s) {
  uint64_t n = s.size();
  return write_all(fd, &n, sizeof n) && write_all(fd, s.data(), s.size());
}

[[noreturn]] void run_worker(int fd, const std::vector<std::string>& units, const std::vector<size_t>& mine,
                             const std::string& arch) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  for (size_t u : mine) {
    CubinResult r;
    try {
      r = nvrtc_compile(units[u], arch);
    } catch (...) {
      continue;
    }
    uint64_t index = u;
    if (!write_all(fd, &index, sizeof index) || !write_all(fd, &r.compile_ms, sizeof r.compile_ms) ||
        !write_blob(fd, r.cubin) || !write_blob(fd, r.log))
      _exit(2);
  }
  _exit(0);
}

// Reads a worker's file back; a record cut short (the worker died writing it) ends the reading.
void read_results(int fd, std::vector<CubinResult>& out, std::vector<bool>& done) {
  struct stat st{};
  if (fstat(fd, &st) != 0 || st.st_size <= 0) return;
  std::string all(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  while (got < all.size()) {
    ssize_t r = ::pread(fd, all.data() + got, all.size() - got, static_cast<off_t>(got));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += static_cast<size_t>(r);
  }
  all.resize(got);
  size_t at = 0;
  auto take = [&](void* dst, size_t n) {
    if (all.size() - at < n) return false;
    std::memcpy(dst, all.data() + at, n);
    at += n;
    return true;
  };
  auto take_blob = [&](std::string& s) {
    uint64_t n = 0;
    if (!take(&n, sizeof n) || all.size() - at < n) return false;
    s.assign(all, at, n);
    at += n;
    return true;
  };
  for (;;) {
    uint64_t index = 0;
    CubinResult r;
    if (!take(&index, sizeof index) || !take(&r.compile_ms, sizeof r.compile_ms) || !take_blob(r.cubin) ||
        !take_blob(r.log) || index >= out.size() || r.cubin.empty())
      return;
    out[index] = std::move(r);
    done[index] = true;
  }
}

// The units in `misses` shared among `n` forked workers; fills what they compiled into out/done.
// Returns the number of workers that ran. Any failure (no memfd, fork refused, a worker killed or
// past its time) only leaves units undone.
int compile_in_workers(const std::vector<std::string>& units, const std::vector<size_t>& misses, unsigned n,
                       const std::string& arch, std::vector<CubinResult>& out, std::vector<bool>& done) {
  struct Worker {
    pid_t pid = -1;
    int fd = -1;
  };
  std::vector<Worker> workers;
  for (unsigned w = 0; w < n; ++w) {
    std::vector<size_t> mine;
    for (size_t i = w; i < misses.size(); i += n) mine.push_back(misses[i]);
    int fd = static_cast<int>(syscall(SYS_memfd_create, "kiln-nvrtc", 1u /* MFD_CLOEXEC */));
    if (fd < 0) break;
    pid_t pid = fork();
    if (pid == 0) run_worker(fd, units, mine, arch);
    if (pid < 0) {
      ::close(fd);
      break;
    }
    workers.push_back({pid, fd});
  }
  // A worker is given what one thread would need for every unit, with room: past that it is stopped
  // and its units compile here.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120 + 10 * misses.size());
  size_t running = workers.size();
  std::vector<bool> finished(workers.size(), false);
  while (running > 0) {
    bool any = false;
    for (size_t w = 0; w < workers.size(); ++w) {
      if (finished[w]) continue;
      int status = 0;
      pid_t r = waitpid(workers[w].pid, &status, WNOHANG);
      if (r == workers[w].pid || (r < 0 && errno != EINTR)) {
        finished[w] = true;
        --running;
        any = true;
      }
    }
    if (running == 0) break;
    if (std::chrono::steady_clock::now() > deadline) {
      for (size_t w = 0; w < workers.size(); ++w)
        if (!finished[w]) {
          kill(workers[w].pid, SIGKILL);
          waitpid(workers[w].pid, nullptr, 0);
        }
      break;
    }
    if (!any) std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  for (const auto& w : workers) {
    read_results(w.fd, out, done);
    ::close(w.fd);
  }
  return static_cast<int>(workers.size());
}

}  // namespace

CubinResult compile_cuda(const std::string& source, const std::string& arch) {
  fs::path bin = cache_entry(source, arch);
  CacheLoad cached = cache_load_verified(bin);
  if (cached.bytes && !cached.bytes->empty()) {
    CubinResult out;
    out.cubin = std::move(*cached.bytes);
    out.cache_hit = true;
    return out;
  }
  CubinResult out;
  {
    std::lock_guard<std::mutex> lock(nvrtc_mutex());
    out = nvrtc_compile(source, arch);
  }
  cache_store(bin, out.cubin);  // temporaries are unique per process and call
  return out;
}

CubinSet compile_cuda_units(const std::vector<std::string>& units, const std::string& arch, unsigned workers) {
  CubinSet out;
  out.units.resize(units.size());
  auto t0 = std::chrono::steady_clock::now();
  std::vector<bool> done(units.size(), false);
  std::vector<fs::path> entries(units.size());
  std::vector<size_t> misses;
  for (size_t i = 0; i < units.size(); ++i) {
    entries[i] = cache_entry(units[i], arch);
    CacheLoad cached = cache_load_verified(entries[i]);
    if (cached.bytes && !cached.bytes->empty()) {
      out.units[i].cubin = std::move(*cached.bytes);
      out.units[i].cache_hit = true;
      done[i] = true;
    } else {
      misses.push_back(i);
    }
  }
  unsigned n = worker_count(workers, misses.size());
  if (n >= 2) {
    std::lock_guard<std::mutex> lock(nvrtc_mutex());
    out.workers = compile_in_workers(units, misses, n, arch, out.units, done);
    for (size_t i : misses)
      if (done[i]) cache_store(entries[i], out.units[i].cubin);
  }
  // What no worker compiled (one unit at a time, or a worker's failure): here, in order, so the error
  // thrown is the first failing unit's.
  for (size_t i : misses)
    if (!done[i]) {
      {
        std::lock_guard<std::mutex> lock(nvrtc_mutex());
        out.units[i] = nvrtc_compile(units[i], arch);
      }
      cache_store(entries[i], out.units[i].cubin);
    }
  for (const auto& u : out.units) out.all_cached = out.all_cached && u.cache_hit;
  out.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace kiln::codegen
