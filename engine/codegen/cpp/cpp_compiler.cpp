#include "engine/codegen/cpp/cpp_compiler.h"

#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

#include "engine/base/error.h"
#include "engine/base/kernel_cache.h"
#include "engine/base/output_file.h"
#include "engine/base/sha256.h"

namespace kiln::codegen {

namespace fs = std::filesystem;

namespace {

std::atomic<int> g_invocations{0};
std::atomic<int> g_hits{0};

std::string run_capture(const std::string& cmd, int& status) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) {
    status = -1;
    return out;
  }
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  status = ::pclose(p);
  return out;
}

std::string compiler() {
  const char* cxx = std::getenv("KILN_CXX");
  return cxx && *cxx ? cxx : "c++";
}

std::string quote_shell(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

std::string cpp_compiler_id() {
  static std::once_flag once;
  static std::string id;
  std::call_once(once, [] {
    int status = 0;
    std::string v = run_capture(compiler() + " --version 2>/dev/null", status);
    id = v.substr(0, v.find('\n'));
    if (id.empty()) id = "unknown compiler";
  });
  return id;
}

// A sanitized Kiln (cmake/Sanitizers.cmake) compiles its kernels with the same sanitizers.
#ifdef KILN_KERNEL_SANITIZE_FLAGS
std::string cpp_flags() {
  return std::string("-O3 -march=native -fopenmp -fPIC -shared -std=c++17 -fno-math-errno ") + KILN_KERNEL_SANITIZE_FLAGS;
}
#else
std::string cpp_flags() { return "-O3 -march=native -fopenmp -fPIC -shared -std=c++17 -fno-math-errno"; }
#endif

std::string kiln_cache_dir() { return kernel_cache_root(); }

CppCompilerStats cpp_compiler_stats() { return CppCompilerStats{g_invocations.load(), g_hits.load()}; }

// Compiles `source` into a temporary beside `so` and moves it (with its hash) into place; the
// source is kept beside it as `cpp` for the user to read. Throws kiln::Error on a failed write or
// compile, naming the file and the compiler's first lines.
static void compile_into_cache(const std::string& source, const fs::path& cpp, const fs::path& so) {
  fs::path tmp_cpp = temporary_beside(cpp.string(), ".cpp"), tmp_so = temporary_beside(so.string(), ".so");
  std::error_code ec;
  {
    std::ofstream out(tmp_cpp);
    out << source;
    out.flush();
    out.close();
    if (!out) {
      fs::remove(tmp_cpp, ec);
      throw Error(tmp_cpp.string() + ": cannot write generated source (disk full?)");
    }
  }
  std::string cmd = compiler() + " " + cpp_flags() + " -o " + quote_shell(tmp_so.string()) + " " +
                    quote_shell(tmp_cpp.string()) + " 2>&1";
  int status = 0;
  ++g_invocations;
  std::string log = run_capture(cmd, status);
  if (status != 0 || !fs::exists(tmp_so)) {
    fs::remove(tmp_so, ec);
    std::istringstream lines(log);
    std::string first, l;
    for (int i = 0; i < 6 && std::getline(lines, l); ++i) first += (first.empty() ? "" : " | ") + l;
    throw Error("C++ kernel compilation failed (" + tmp_cpp.string() + "): " + first);
  }
  fs::rename(tmp_cpp, cpp, ec);
  if (ec) fs::remove(tmp_cpp, ec);
  cache_adopt(tmp_so, so);  // hash recorded, then renamed into place
}

CppLibrary compile_cpp(const std::string& source, const std::vector<std::string>& kernel_names) {
  CppLibrary lib;
  std::string key = sha256_hex(source + "\n" + cpp_compiler_id() + "\n" + cpp_flags()).substr(0, 32);
  fs::path dir = open_kernel_cache("cpp");
  fs::path so = dir / (key + ".so");
  fs::path cpp = dir / (key + ".cpp");
  lib.path = so.string();
  lib.source_path = cpp.string();
  // Another process compiling the same key at the same moment can pair its hash with our library (a
  // miss: compiling again settles it) or replace the entry between our verifying and loading it (the
  // load refuses it: the new entry is verified and loaded instead). Either settles within a few rounds.
  void* h = nullptr;
  for (int round = 0; h == nullptr; ++round) {
    CacheLoad cached = cache_load_verified(so);
    if (cached.bytes && round == 0) {
      lib.cache_hit = true;
      ++g_hits;
    } else if (!cached.bytes) {
      if (round == 0 && !cached.why_not.empty()) lib.cache_rejected = cached.why_not;
      auto t0 = std::chrono::steady_clock::now();
      for (int attempt = 0; !cached.bytes; ++attempt) {
        compile_into_cache(source, cpp, so);
        cached = cache_load_verified(so);
        if (!cached.bytes && attempt >= 2)
          throw Error(so.string() + ": the compiled kernel library does not verify (" + cached.why_not + ")");
      }
      lib.compile_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    }
    auto t1 = std::chrono::steady_clock::now();
    try {
      h = dlopen_verified(so, cached);
    } catch (const Error&) {
      if (round >= 3) throw;
    }
    lib.load_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count();
  }
  lib.handle = std::shared_ptr<void>(h, [](void* p) { ::dlclose(p); });
  for (const auto& name : kernel_names) {
    void* f = ::dlsym(h, name.c_str());
    if (!f) throw Error(so.string() + ": kernel " + name + " is missing from the library");
    lib.kernels[name] = reinterpret_cast<KernelFn>(f);
  }
  return lib;
}

}  // namespace kiln::codegen
