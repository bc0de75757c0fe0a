// The CUDA target: one translation unit per kernel (with its autotuning variants under max-autotune),
// compiled by NVRTC in parallel, cached one by one, loaded as driver-API modules. After the pipeline,
// make_region_fn wraps the kernels for the mode: cuBLAS-vs-template GEMM races and cuDNN benchmark
// mode under max-autotune, CUDA-graph replay under reduce-overhead and max-autotune.
#pragma once

#include "kiln_build_config.h"

#if KILN_WITH_CUDA
#include <map>
#include <memory>
#include <string>

#include "engine/codegen/cuda/emit_cuda.h"
#include "engine/pipeline/pipeline.h"

namespace kiln::runtime {
struct GpuKernelSet;
}

namespace kiln::backends {

class CudaTarget : public pipeline::Target {
 public:
  explicit CudaTarget(const runtime::BackendOptions& options);
  const char* language() const override { return "cuda"; }
  const pipeline::Stage& kernels_stage() const override { return pipeline::kKernelsCuda; }
  std::string emit(const fusion::FusedProgram& fused, const std::vector<codegen::NodeNote>& notes,
                   std::vector<codegen::KernelSpan>& spans) override;
  // NVRTC compiles the units in worker processes while this thread runs the region's convolutions once
  // (runtime/conv_warmup.h): cuDNN's per-configuration work, most of a cold first call, overlaps the compile.
  pipeline::Loaded compile(const std::string& source, const fusion::FusedProgram& fused, const ir::Graph& graph) override;
  void describe(const fusion::FusedKernel& kernel, records::Kernel& record) const override;

  // The region's callable for the mode, over the compiled kernels.
  std::unique_ptr<runtime::CompiledFn> make_region_fn(const capture::SpecializedRegion& entry,
                                                      const capture::RegionStatic& region,
                                                      pipeline::CompiledCode code, runtime::RegionArtifacts& art);

 private:
  runtime::BackendOptions options_;
  std::vector<codegen::CudaKernelInfo> info_;
  std::shared_ptr<runtime::GpuKernelSet> set_;
  std::map<std::string, int> registers_;  // each function's registers, from its binary (no GPU needed)
};

}  // namespace kiln::backends
#endif
