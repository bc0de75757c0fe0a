#include "engine/codegen/cuda/nvrtc_run.h"

#include <nvrtc.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <sstream>

#include "engine/base/error.h"

namespace kiln::codegen {

std::string nvrtc_version() {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return "unknown";
  return std::to_string(major) + "." + std::to_string(minor);
}

namespace {

void check(nvrtcResult r, const char* what) {
  if (r != NVRTC_SUCCESS) throw Error(std::string("NVRTC ") + what + " failed: " + nvrtcGetErrorString(r));
}

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

// The whole file, read from its start.
std::string read_whole(int fd) {
  struct stat st {};
  if (fstat(fd, &st) != 0 || st.st_size <= 0) return {};
  std::string all(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  while (got < all.size()) {
    ssize_t r = ::pread(fd, all.data() + got, all.size() - got, static_cast<off_t>(got));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += static_cast<size_t>(r);
  }
  all.resize(got);
  return all;
}

// Reads fixed-size values and blobs off a byte string; every read checks what is left.
struct Reader {
  const std::string& all;
  size_t at = 0;
  bool take(void* dst, size_t n) {
    if (all.size() - at < n) return false;
    std::memcpy(dst, all.data() + at, n);
    at += n;
    return true;
  }
  bool blob(std::string& s) {
    uint64_t n = 0;
    if (!take(&n, sizeof n) || all.size() - at < n) return false;
    s.assign(all, at, n);
    at += n;
    return true;
  }
};

}  // namespace

std::string nvrtc_first_errors(const std::string& log) {
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
    throw Error("CUDA kernel compilation (NVRTC " + nvrtc_version() + ", " + arch + ") failed: " +
                nvrtc_first_errors(out.log));
  }
  size_t size = 0;
  check(nvrtcGetCUBINSize(prog, &size), "get CUBIN size");
  out.cubin.resize(size);
  check(nvrtcGetCUBIN(prog, out.cubin.data()), "get CUBIN");
  nvrtcDestroyProgram(&prog);
  out.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

bool write_unit_sources(int fd, const std::string& arch, const std::vector<UnitSource>& units) {
  if (!write_blob(fd, arch)) return false;
  for (const auto& u : units)
    if (!write_all(fd, &u.index, sizeof u.index) || !write_blob(fd, *u.source)) return false;
  return true;
}

void read_unit_results(int fd, std::vector<CubinResult>& out, std::vector<bool>& done) {
  std::string all = read_whole(fd);
  Reader in{all};
  for (;;) {
    uint64_t index = 0;
    CubinResult r;
    if (!in.take(&index, sizeof index) || !in.take(&r.compile_ms, sizeof r.compile_ms) || !in.blob(r.cubin) ||
        !in.blob(r.log) || index >= out.size() || r.cubin.empty())
      return;
    out[index] = std::move(r);
    done[index] = true;
  }
}

int nvrtc_worker_main(int in_fd, int out_fd) {
  std::string all = read_whole(in_fd);
  Reader in{all};
  std::string arch;
  if (!in.blob(arch) || arch.empty()) return 2;
  for (;;) {
    uint64_t index = 0;
    std::string source;
    if (!in.take(&index, sizeof index) || !in.blob(source)) break;
    CubinResult r;
    try {
      r = nvrtc_compile(source, arch);
    } catch (const std::exception&) {
      continue;  // the engine compiles it again, for the error
    }
    if (!write_all(out_fd, &index, sizeof index) || !write_all(out_fd, &r.compile_ms, sizeof r.compile_ms) ||
        !write_blob(out_fd, r.cubin) || !write_blob(out_fd, r.log))
      return 3;
  }
  return 0;
}

}  // namespace kiln::codegen
