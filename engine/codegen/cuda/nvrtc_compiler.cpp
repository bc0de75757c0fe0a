#include "engine/codegen/cuda/nvrtc_compiler.h"

#include <nvrtc.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <atomic>
#include <exception>
#include <functional>
#include <sstream>
#include <thread>
#include <unistd.h>

#include "engine/base/error.h"
#include "engine/codegen/cpp/cpp_compiler.h"

namespace kiln::codegen {

namespace fs = std::filesystem;

std::string nvrtc_version() {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return "unknown";
  return std::to_string(major) + "." + std::to_string(minor);
}

namespace {

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

void check(nvrtcResult r, const char* what) {
  if (r != NVRTC_SUCCESS) throw Error(std::string("NVRTC ") + what + " failed: " + nvrtcGetErrorString(r));
}

}  // namespace

CubinResult compile_cuda(const std::string& source, const std::string& arch) {
  CubinResult out;
  char key[17];
  std::snprintf(key, sizeof key, "%016llx",
                static_cast<unsigned long long>(fnv1a(source + "\n" + arch + "\n" + nvrtc_version())));
  fs::path dir = fs::path(kiln_cache_dir()) / "cuda";
  std::error_code ec;
  fs::create_directories(dir, ec);
  fs::path bin = dir / (std::string(key) + "." + arch + ".cubin");
  if (fs::exists(bin)) {
    std::ifstream in(bin, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    out.cubin = ss.str();
    out.cache_hit = !out.cubin.empty();
    if (out.cache_hit) return out;
  }
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
    std::istringstream lines(out.log);
    std::string first, l;
    for (int i = 0; i < 6 && std::getline(lines, l); ++i) first += (first.empty() ? "" : " | ") + l;
    throw Error("CUDA kernel compilation (NVRTC " + nvrtc_version() + ", " + arch + ") failed: " + first);
  }
  size_t size = 0;
  check(nvrtcGetCUBINSize(prog, &size), "get CUBIN size");
  out.cubin.resize(size);
  check(nvrtcGetCUBIN(prog, out.cubin.data()), "get CUBIN");
  nvrtcDestroyProgram(&prog);
  out.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  // Unique per process and thread: units compile in parallel.
  fs::path tmp = dir / (std::string(key) + "." + std::to_string(::getpid()) + "." +
                        std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id())) + ".tmp");
  {
    std::ofstream f(tmp, std::ios::binary);
    f.write(out.cubin.data(), static_cast<std::streamsize>(out.cubin.size()));
  }
  fs::rename(tmp, bin, ec);
  return out;
}

CubinSet compile_cuda_units(const std::vector<std::string>& units, const std::string& arch, unsigned threads) {
  CubinSet out;
  out.units.resize(units.size());
  auto t0 = std::chrono::steady_clock::now();
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  threads = std::min<unsigned>(threads, static_cast<unsigned>(units.size()));
  std::vector<std::exception_ptr> errors(units.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next++) < units.size();) {
      try {
        out.units[i] = compile_cuda(units[i], arch);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  for (const auto& u : out.units) out.all_cached = out.all_cached && u.cache_hit;
  out.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace kiln::codegen
