// max-autotune for the GEMMs of a region: per `linear` extern, times cuBLAS (LibTorch's op) against
// Kiln's TF32 tensor-core template in several tile shapes (codegen/cuda/gemm_template), checks each
// template's result against cuBLAS's, keeps the fastest correct candidate and records the table.
// The template is only a candidate when LibTorch allows TF32 for matmul (PyTorch's policy).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/capture/interpreter.h"
#include "engine/session/session.h"

namespace kiln::runtime {

class GemmTuner {
 public:
  // comps: the computation indexes of the region's linear externs; names: their graph node names.
  GemmTuner(std::vector<size_t> comps, std::vector<std::string> names);
  ~GemmTuner();
  // Runs extern `comp` when it is one of this tuner's GEMMs and the template won (out = its result);
  // false: the caller runs LibTorch's op. Tunes on the first call outside CUDA graph capture.
  bool run(size_t comp, const torch::jit::Node* n, capture::Interpreter::Env& env, capture::Interpreter& interp,
           at::Tensor& out);
  // One candidate table per GEMM, in the order of `comps`.
  std::vector<std::vector<session::AutotuneCandidate>> tables() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln::runtime
