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
  double wall_ms = 0;              // the whole parallel compile
  bool all_cached = true;
};
// Compiles independent translation units (one per kernel: cuda_units) on up to `threads` threads
// (0: one per core), each cached on its own. Throws the error of the first unit that fails.
CubinSet compile_cuda_units(const std::vector<std::string>& units, const std::string& arch, unsigned threads = 0);

}  // namespace kiln::codegen
