// Launching generated CUDA kernels from a lowered region: one KernelCall per kernel that packs the
// region's buffers, scalars and size symbols into the kernel's by-value argument block, sizes the
// grid from the (possibly symbolic) range and launches on LibTorch's current stream. In
// max-autotune mode the first call times every candidate block size and keeps the fastest.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/codegen/cuda/emit_cuda.h"
#include "engine/runtime/cuda/cuda_driver.h"
#include "engine/runtime/lowered_region.h"
#include "engine/session/session.h"

namespace kiln::runtime {

struct GpuKernelSet {
  // One module per kernel (each compiled as its own unit, in parallel), or one for all.
  std::vector<std::shared_ptr<cuda::Module>> modules;
  std::vector<codegen::CudaKernelInfo> info;
  std::vector<std::string> symbols;
  size_t nbuf = 0, nscalar = 0, nsym = 0;  // slots in the kernels' argument block (each at least 1)
  size_t scalar_count = 0, buffer_count = 0;  // how many the region really has
  bool autotune = false;
  std::vector<unsigned> threads;  // per kernel
  std::vector<size_t> variant;    // per kernel: index into info[k].variants
  std::vector<bool> tuned;
  std::vector<std::vector<session::AutotuneCandidate>> candidates;

  // Kernel k's module (the only one when the source was compiled whole).
  const cuda::Module& module(size_t k) const { return *modules.at(modules.size() == 1 ? 0 : k); }
};

// Available only when LibTorch has CUDA (KILN_TORCH_CUDA); throws kiln::Error otherwise.
std::vector<KernelCall> make_gpu_calls(const std::shared_ptr<GpuKernelSet>& set);

}  // namespace kiln::runtime
