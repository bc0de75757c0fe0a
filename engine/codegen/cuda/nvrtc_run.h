// NVRTC itself, shared by the engine and its compile worker (app/nvrtc_worker.cpp): one source to one
// CUBIN, and the files a worker reads its units from and writes its CUBINs to. No cache, no LibTorch:
// the worker links this file and NVRTC alone.
//
// Worker files (anonymous, one pair per worker; integers little-endian as the host writes them):
//   units in:    blob arch, then per unit: u64 index, blob source
//   results out: per compiled unit: u64 index, f64 compile ms, blob cubin, blob log
//   blob = u64 size, then the bytes. A unit that fails to compile has no result (the engine compiles
//   it again itself, for the error); a record cut short ends the reading.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/codegen/cuda/nvrtc_compiler.h"

namespace kiln::codegen {

// Throws kiln::Error naming NVRTC's errors when the source does not compile.
CubinResult nvrtc_compile(const std::string& source, const std::string& arch);

// The log's error lines (with the source line and caret under each); its first lines if none says error.
std::string nvrtc_first_errors(const std::string& log);

struct UnitSource {
  uint64_t index = 0;
  const std::string* source = nullptr;
};
bool write_unit_sources(int fd, const std::string& arch, const std::vector<UnitSource>& units);
// Fills out[index] and done[index] for every complete record; indices past out.size() end the reading.
void read_unit_results(int fd, std::vector<CubinResult>& out, std::vector<bool>& done);

// The worker: compiles every unit read from in_fd, writes the results to out_fd. Returns the exit code.
int nvrtc_worker_main(int in_fd, int out_fd);

}  // namespace kiln::codegen
