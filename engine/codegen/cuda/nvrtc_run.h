// NVRTC itself, shared by the engine and its compile worker (app/nvrtc_worker.cpp): one source to one
// CUBIN, and the files a worker reads its units from and writes its CUBINs to. No cache, no LibTorch:
// the worker links this file and NVRTC alone.
//
// Worker files (anonymous, one pair per worker; integers little-endian as the host writes them):
//   units in:    blob arch, then per chunk: its first unit, u64 member count, each member's unit; a unit is
//                u64 index, blob source, blob function names (one per line)
//   results out: per compiled unit: u64 index, f64 compile ms, u8 assembled, blob cubin, blob log
//   blob = u64 size, then the bytes. A unit that fails to compile has no result (the engine compiles
//   it again itself, for the error); a record cut short ends the reading.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/codegen/cuda/nvrtc_compiler.h"

namespace kiln::codegen {

// Throws kiln::Error naming NVRTC's errors when the source does not compile. With `ptx`, also the PTX it
// assembled.
CubinResult nvrtc_compile(const std::string& source, const std::string& arch, std::string* ptx = nullptr);

// Each function's resources from ptxas's verbose lines in an NVRTC log ("Function properties for f", "N bytes
// stack frame, N bytes spill stores, N bytes spill loads", "Used N registers, ..., N bytes smem"), in the order the
// log names them; lines it does not know are skipped.
std::vector<KernelResources> parse_ptxas_resources(const std::string& log);

// The log's error lines (with the source line and caret under each); its first lines if none says error.
std::string nvrtc_first_errors(const std::string& log);

// The PTX with each function from[i] (its entry and its parameters, "<name>_param_<k>") named to[i]; nullopt when
// the lists differ in length or a name of `from` is still among its identifiers afterwards.
std::optional<std::string> rename_ptx_functions(const std::string& ptx, const std::vector<std::string>& from,
                                                const std::vector<std::string>& to);

// PTX to CUBIN through nvJitLink (loaded at run time, beside NVRTC or on the loader's path), the assembler's
// defaults as NVRTC runs them plus -lineinfo. Throws kiln::Error when nvJitLink is not there or fails.
CubinResult assemble_ptx(const std::string& ptx, const std::string& arch);

// One process's share of a compile (unit_chunks): a unit compiled whole, and units of the same code assembled
// from its PTX with its functions renamed to theirs; a member whose PTX cannot be made so (the rename refused,
// no nvJitLink, the assembler failing) compiles whole. `done` gets each unit's result as it is made. Throws
// when the first unit does not compile (its members are not tried: they are the same code).
struct UnitSource {
  uint64_t index = 0;
  const std::string* source = nullptr;
  std::vector<std::string> functions;
};
struct UnitChunk {
  UnitSource first;
  std::vector<UnitSource> members;
};
void compile_chunk(const UnitChunk& chunk, const std::string& arch,
                   const std::function<void(uint64_t, CubinResult&&)>& done);

bool write_unit_sources(int fd, const std::string& arch, const std::vector<UnitChunk>& chunks);
// Fills out[index] and done[index] for every complete record; indices past out.size() end the reading.
void read_unit_results(int fd, std::vector<CubinResult>& out, std::vector<bool>& done);

// The worker: compiles every unit read from in_fd, writes the results to out_fd. Returns the exit code.
int nvrtc_worker_main(int in_fd, int out_fd);

}  // namespace kiln::codegen
