// max-autotune for the GEMMs of a region: per `linear` extern, times cuBLAS (LibTorch's op), cuBLAS's
// plain matrix product followed by the bias (LibTorch hands a bias to cuBLASLt as an epilogue, which
// changes cuBLAS's choice of kernel), cuBLASLt called directly with the fastest of its heuristic's
// candidates (lt_gemm.h) followed by the bias, and Kiln's TF32 tensor-core template in several tile shapes
// (codegen/cuda/gemm_template), checks each result against LibTorch's, keeps the fastest correct
// candidate and records the table.
// When a pointwise kernel follows the GEMM, the template runs it as its epilogue and the race is
// cuBLAS + that kernel against the fused template (its outputs checked too).
// The template is only a candidate when LibTorch allows TF32 for matmul (PyTorch's policy).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/capture/interpreter.h"
#include "engine/codegen/cuda/gemm_template.h"
#include "engine/runtime/cuda/gpu_kernels.h"
#include "engine/runtime/lowered_region.h"
#include "engine/records/records.h"

namespace kiln::runtime {

// One `linear` of the region, and the pointwise kernel after it when that kernel can run as the
// template's epilogue.
struct GemmSite {
  size_t comp = 0;                               // the extern computation
  std::string name;                              // its graph node
  std::optional<codegen::GemmEpilogue> epilogue;  // the tail kernel as epilogue code
  int tail_kernel = -1;                          // that kernel's index (the step after the GEMM)
  std::vector<int> tail_comps;                   // the computations it writes
};

// Tests only: every tuner created afterwards keeps tile `config` (an index into its tiles) when it
// is correct, whatever the timings say, so the fused path is exercised; -1 restores timing.
void force_gemm_tile_for_testing(int config);

class GemmTuner {
 public:
  GemmTuner(std::vector<GemmSite> sites, KernelArgsShape args);
  ~GemmTuner();
  // Runs extern `comp` when it is one of this tuner's GEMMs and the template won (out = its result;
  // with an epilogue the tail kernel's buffers are written too and cx.next_kernel_done is set);
  // false: the caller runs LibTorch's op. Tunes on the first call outside CUDA graph capture:
  // cuBLAS (followed by the tail kernel) against each template tile (with the tail fused).
  bool run(size_t comp, const torch::jit::Node* n, capture::Interpreter::Env& env, capture::Interpreter& interp,
           at::Tensor& out, LoweredRegionFn::ExternContext& cx);
  // Compiles every tile of every GEMM (each with its epilogue) at once, in parallel; run() would
  // otherwise compile them one by one on the first call. Nothing while TF32 is off for matmul.
  void precompile();
  // One candidate table per GEMM, in the order of `sites`.
  std::vector<std::vector<records::AutotuneCandidate>> tables() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln::runtime
