// Launching generated CUDA kernels from a lowered region: one KernelCall per kernel that packs the
// region's buffers, scalars and size symbols into the kernel's by-value argument block, sizes the
// grid from the (possibly symbolic) range and launches on LibTorch's current stream. In
// max-autotune mode the first call times every candidate block size and form and keeps the fastest, unless the
// kernel's own launch (its first form at its block size) is within 3 % of it: then its own.
#pragma once

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "engine/codegen/cuda/emit_cuda.h"
#include "engine/runtime/cuda/cuda_driver.h"
#include "engine/runtime/lowered_region.h"
#include "engine/records/records.h"

namespace kiln::runtime {

// The generated kernels' by-value argument block (KilnArgs in emit_cuda): nbuf buffer pointers,
// nscalar doubles, nsym size symbols, each array at least one slot long; the region fills the first
// buffer_count / scalar_count / sym_count slots.
struct KernelArgsShape {
  size_t nbuf = 1, nscalar = 1, nsym = 1;
  size_t buffer_count = 0, scalar_count = 0, sym_count = 0;

  size_t bytes() const { return 8 * (nbuf + nscalar + nsym); }
  // Writes the block at `out` (bytes() long, zeroed by the caller).
  void pack(char* out, void* const* ptrs, const double* scalars, const int64_t* syms) const {
    if (buffer_count) std::memcpy(out, ptrs, 8 * buffer_count);
    if (scalar_count) std::memcpy(out + 8 * nbuf, scalars, 8 * scalar_count);
    if (sym_count) std::memcpy(out + 8 * (nbuf + nscalar), syms, 8 * sym_count);
  }
  // One kernel's own block (KilnArgs_<kernel>): the pointers of `own` (region buffer indices), then the
  // region's scalars and sizes laid out as above. `out` is resized and zeroed.
  void pack_own(std::vector<char>& out, const std::vector<int>& own, void* const* ptrs, const double* scalars,
                const int64_t* syms) const {
    const size_t n = own.empty() ? 1 : own.size();
    out.assign(8 * (n + nscalar + nsym), 0);
    for (size_t i = 0; i < own.size(); ++i) std::memcpy(out.data() + 8 * i, &ptrs[own[i]], 8);
    if (scalar_count) std::memcpy(out.data() + 8 * n, scalars, 8 * scalar_count);
    if (sym_count) std::memcpy(out.data() + 8 * (n + nscalar), syms, 8 * sym_count);
  }
};

struct GpuKernelSet {
  // One module per kernel (each compiled as its own unit, in parallel), or one for all.
  std::vector<std::shared_ptr<cuda::Module>> modules;
  std::vector<codegen::CudaKernelInfo> info;
  std::vector<std::string> symbols;
  KernelArgsShape args;  // the kernels' argument block
  bool autotune = false;
  std::vector<unsigned> threads;  // per kernel
  std::vector<size_t> variant;    // per kernel: index into info[k].variants
  std::vector<bool> tuned;
  std::vector<std::vector<records::AutotuneCandidate>> candidates;
  // Per kernel, its last launch once tuned: repeated for the same work without looking it up again
  // (the module's function by name, its thread limit from the driver, the grid).
  struct Launch {
    cuda::Function function = nullptr;
    unsigned blocks = 0, threads = 0;
    int64_t work = -1;
  };
  std::vector<Launch> last_launch;

  // Kernel k's module (the only one when the source was compiled whole).
  const cuda::Module& module(size_t k) const { return *modules.at(modules.size() == 1 ? 0 : k); }
};

// Available only when LibTorch has CUDA (KILN_TORCH_CUDA); throws kiln::Error otherwise.
std::vector<KernelCall> make_gpu_calls(const std::shared_ptr<GpuKernelSet>& set);

// Tests only: while set (non-empty), max-autotune keeps the form of each kernel whose function is its name and
// `suffix` (at its fastest block size) whatever the timings say, so every form's results can be checked; a kernel
// without such a form keeps its timed choice. "" restores timing.
void force_kernel_form_for_testing(const std::string& suffix);

}  // namespace kiln::runtime
