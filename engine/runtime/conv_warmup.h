// A region's convolutions (and attention calls, warm_attention below) run once ahead of its first call, on
// uninitialised tensors of the sizes, dtypes, memory layouts and arguments the region will call them with, so that the library's
// per-process work for each configuration (cuDNN's plans and the kernels they load: 1.6-2.8 s for a
// channels-last mobile network's first call on an H200) is done while something else waits, the GPU
// target's NVRTC compile of the same region. What the first call then finds is already built.
//
// warm_convolutions(graph, program, device, benchmark)
//   pre:  program is graph's lowered (and laid out) loop program; device is "cpu" or "cuda[:N]".
//   post: every extern aten::conv2d whose operands have constant sizes and whose stride, padding,
//         dilation and groups are literals in graph ran once on `device` (with its bias unless the
//         lowering dropped it), under cuDNN benchmark mode when `benchmark` (as max-autotune's first
//         call runs them); the others are counted as skipped. Values are never read back.
//   error: none thrown; a convolution LibTorch refuses is counted as failed (the first call will
//          report it as it would have).
#pragma once

#include <string>

#include "engine/ir/graph.h"
#include "engine/lowering/loop_ir.h"

namespace kiln::runtime {

struct ConvWarmup {
  int warmed = 0;   // convolutions run
  int skipped = 0;  // symbolic sizes, non-literal arguments
  int failed = 0;   // LibTorch refused them
};

ConvWarmup warm_convolutions(const ir::Graph& graph, const lowering::LoopProgram& program, const std::string& device,
                             bool benchmark = false);

// cuDNN's benchmark mode (LibTorch's process-wide flag) set to `on` for the scope's life and put back as it was after
// it: warm_convolutions's runs, and max-autotune's convolutions in a region (LoweredRegionFn::set_cudnn_benchmark).
class CudnnBenchmarkScope {
 public:
  explicit CudnnBenchmarkScope(bool on);
  ~CudnnBenchmarkScope();
  CudnnBenchmarkScope(const CudnnBenchmarkScope&) = delete;
  CudnnBenchmarkScope& operator=(const CudnnBenchmarkScope&) = delete;

 private:
  bool before_;
};

// The region's attention calls (lowering/attention.h's kiln::scaled_dot_product_attention externs) run once the
// same way, through the call the region makes (direct_extern.h's call_attention), on uninitialised operands of their
// sizes, dtypes and layouts: the first fused attention call of a process loads and builds the library's kernels
// (0.59-0.69 s of the first call of the benchmark's 4-layer GPT-2 and BERT in bfloat16 at batch 8 on an H200, more
// than NVRTC's whole compile of their kernels), which then overlaps the compile as the convolutions' set-up does.
//   post: every such extern whose operands have constant sizes ran once on `device`; the others are skipped.
//   error: none thrown; a call LibTorch refuses is counted as failed.
ConvWarmup warm_attention(const lowering::LoopProgram& program, const std::string& device);

}  // namespace kiln::runtime
