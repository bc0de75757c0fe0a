// NVRTC adapter (the only file that includes nvrtc.h): compiles generated CUDA C++ to a CUBIN for
// one architecture, cached on disk by a hash of source + arch + NVRTC version. Needs no GPU and no
// driver, so CI compiles every generated CUDA source.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::codegen {

struct CubinResult {
  std::string cubin;      // the binary image
  std::string log;        // NVRTC's log (warnings)
  bool cache_hit = false;
  double compile_ms = 0;
  bool assembled = false;  // only assembled, from the PTX of a unit of the same code (UnitGroups)
};

// arch: "sm_90". Throws kiln::Error with NVRTC's first log lines on a compile error.
CubinResult compile_cuda(const std::string& source, const std::string& arch);
std::string nvrtc_version();  // "13.0"

// What the assembler says of each kernel of `source` for `arch` (ptxas -v through NVRTC; compiled here, not
// cached): registers per thread, spilled bytes, stack frame, static shared memory. Throws like compile_cuda.
struct KernelResources {
  std::string function;
  int registers = 0;
  int64_t spill_store_bytes = 0, spill_load_bytes = 0, stack_bytes = 0;
  int64_t shared_bytes = 0;  // static (__shared__ arrays); dynamic shared memory is the launch's
};
std::vector<KernelResources> kernel_resources(const std::string& source, const std::string& arch);

struct CubinSet {
  std::vector<CubinResult> units;  // one per unit, in order
  double wall_ms = 0;              // the whole compile
  bool all_cached = true;
  int workers = 1;                 // processes that compiled (1: this process alone)
  int assembled = 0;               // units only assembled from another's PTX
};

// Which units are the same code but for their functions' names (kernel_units.h): group[u] is the same for
// them; functions[u] names unit u's functions in corresponding order. A unit of a group compiles the
// front end once: each other one of the group assembles that unit's PTX with the functions renamed
// (nvJitLink, loaded at run time; where it is missing or fails, the unit compiles whole).
struct UnitGroups {
  std::vector<int> group;
  std::vector<std::vector<std::string>> functions;
};
// Compiles independent translation units (one per kernel: cuda_units), each cached on its own. NVRTC
// runs one compile at a time inside a process (H200 host, 64 units: 1.0 s on one thread, 1.3 s on 16
// threads), and forking this large process gained nothing (a fork copies its page tables: 16 forks of
// a parent with 2 GB touched took 0.4 s on a 2-core Debian machine), so from 3 missing units on they are shared among up to `workers` spawned
// kiln-nvrtc-worker processes (0: one per core, at most 16; KILN_NVRTC_WORKERS overrides, 0 or 1:
// none), each reading its units from an anonymous file and writing its CUBINs to another that this
// process reads back. Units a worker did not compile (no worker binary, a compile error, a crash, past
// its time) compile here, in order, so the error thrown is the first failing unit's.
CubinSet compile_cuda_units(const std::vector<std::string>& units, const std::string& arch, unsigned workers = 0,
                            const UnitGroups* groups = nullptr);

// The missing units of groups in chunks, each compiled by one process: a chunk is one unit compiled whole
// and others of its group assembled from its PTX. A group is split where one chunk would cost more than
// `bound` (in source bytes; an assembly counted as kAssemblyShare of a whole compile), so a large kernel
// repeated many times still spreads over the workers. Each chunk: its units' positions in `misses`, the
// one compiled whole first.
constexpr double kAssemblyShare = 0.4;
std::vector<std::vector<size_t>> unit_chunks(const std::vector<size_t>& misses, const std::vector<size_t>& sizes,
                                             const UnitGroups* groups, double bound);

// Units (by their sources' sizes, which NVRTC's time follows: a window's kernel with max-autotune's eleven forms
// takes seconds where a one-form pointwise kernel takes tens of milliseconds) shared among n workers, the largest first
// to whichever has least so far: each worker's positions in `sizes`, ascending. Dealt round-robin, a worker could get
// several of the largest while another got only small ones.
std::vector<std::vector<size_t>> share_units(const std::vector<size_t>& sizes, unsigned n);

}  // namespace kiln::codegen
