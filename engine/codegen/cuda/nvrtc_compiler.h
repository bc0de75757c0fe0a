// NVRTC adapter (the only file that includes nvrtc.h): compiles generated CUDA C++ to a CUBIN for
// one architecture, cached on disk by a hash of source + arch + NVRTC version. Needs no GPU and no
// driver, so CI compiles every generated CUDA source.
#pragma once

#include <string>
#include <vector>

namespace kiln::codegen {

struct CubinResult {
  std::string cubin;      // the binary image
  std::string log;        // NVRTC's log (warnings)
  bool cache_hit = false;
  double compile_ms = 0;
};

// arch: "sm_90". Throws kiln::Error with NVRTC's first log lines on a compile error.
CubinResult compile_cuda(const std::string& source, const std::string& arch);
std::string nvrtc_version();  // "13.0"

struct CubinSet {
  std::vector<CubinResult> units;  // one per unit, in order
  double wall_ms = 0;              // the whole compile
  bool all_cached = true;
  int workers = 1;                 // processes that compiled (1: this process alone)
};
// Compiles independent translation units (one per kernel: cuda_units), each cached on its own. NVRTC
// serializes compiles inside one process (on the H200's 16-core host: 64 units took 1.0 s on one
// thread and 1.3 s on 16), so the units missing from the cache are shared among up to `workers`
// forked processes (0: one per core, at most 16; KILN_NVRTC_WORKERS overrides), each compiling its
// share into an anonymous file this process reads back; a worker that fails, crashes or outlives
// its time leaves its units to this process, which compiles them itself (and reports their errors).
// Throws the error of the first unit that fails.
CubinSet compile_cuda_units(const std::vector<std::string>& units, const std::string& arch, unsigned workers = 0);

}  // namespace kiln::codegen
