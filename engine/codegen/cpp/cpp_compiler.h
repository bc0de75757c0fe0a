// Compiles generated C++ into a shared library with the system compiler and loads it (dlopen).
// Libraries are cached on disk by a hash of source + compiler version + flags: a second compile
// of the same source invokes no compiler.
//
// The cache (engine/base/kernel_cache.h) is private to the user; a library is loaded only after its
// bytes match the SHA-256 recorded when it was compiled, and from those verified bytes.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace kiln::codegen {

using KernelFn = void (*)(void* const*, const double*, const int64_t*);

struct CppLibrary {
  std::string path;        // the .so
  std::string source_path; // the .cpp kept beside it
  bool cache_hit = false;
  std::string cache_rejected;  // why a cached library on disk was not used (failed verification), else ""
  double compile_ms = 0;   // compiler time (0 on a cache hit)
  double load_ms = 0;
  std::shared_ptr<void> handle;  // dlclose on release
  std::map<std::string, KernelFn> kernels;
};

struct CppCompilerStats {
  int invocations = 0;  // compiler processes started in this process
  int cache_hits = 0;
};

// Throws kiln::Error with the compiler's first error lines when compilation fails.
CppLibrary compile_cpp(const std::string& source, const std::vector<std::string>& kernel_names);

std::string cpp_compiler_id();   // "g++ (Debian 12.2.0-14) 12.2.0"
std::string cpp_flags();         // the flags used
std::string kiln_cache_dir();
CppCompilerStats cpp_compiler_stats();

}  // namespace kiln::codegen
