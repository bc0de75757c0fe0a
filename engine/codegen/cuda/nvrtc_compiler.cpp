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

CubinResult compile_cuda(const std::string& source, const std::string& arch) {
  CubinResult out;
  std::string key = sha256_hex(source + "\n" + arch + "\n" + nvrtc_version()).substr(0, 32);
  fs::path dir = open_kernel_cache("cuda");
  fs::path bin = dir / (key + "." + arch + ".cubin");
  CacheLoad cached = cache_load_verified(bin);
  if (cached.bytes && !cached.bytes->empty()) {
    out.cubin = std::move(*cached.bytes);
    out.cache_hit = true;
    return out;
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
  cache_store(bin, out.cubin);  // temporaries are unique per process and call: units compile in parallel
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
