// The eager backend: the captured region's ops one by one through LibTorch (the trace capture
// recorded), and cudagraphs (the same ops replayed from a CUDA graph).
#include "engine/backends/eager/eager_backend.h"
#include "kiln_build_config.h"

#include "engine/runtime/backend.h"
#include "engine/ir/print_text.h"
#if KILN_WITH_CUDA
#include "engine/runtime/cuda/cuda_graph_fn.h"
#endif

namespace kiln::backends {

namespace {

class EagerBackend : public runtime::Backend {
 public:
  std::string name() const override { return "eager"; }
  std::unique_ptr<runtime::CompiledFn> compile(const capture::SpecializedRegion& entry, const capture::RegionStatic&,
                                               const runtime::BackendOptions&, runtime::RegionArtifacts& art) override {
    art.stages.push_back({"00_captured.txt", ir::to_readable(entry.info.graph)});
    return nullptr;  // the runtime replays the captured trace
  }
};

// cudagraphs: the region's eager ops captured into a CUDA graph and replayed (a peer for
// reduce-overhead that involves no code generation).
class CudaGraphsBackend : public runtime::Backend {
 public:
  std::string name() const override { return "cudagraphs"; }
  std::unique_ptr<runtime::CompiledFn> compile(const capture::SpecializedRegion& entry, const capture::RegionStatic& region,
                                               const runtime::BackendOptions&, runtime::RegionArtifacts& art) override {
    art.stages.push_back({"00_captured.txt", ir::to_readable(entry.info.graph)});
#if KILN_WITH_CUDA
    return runtime::make_cuda_graph_fn(runtime::make_trace_fn(entry), region.inputs, region.outputs, &region);
#else
    (void)region;
    art.note = "this Kiln was built without the CUDA toolkit; region runs eagerly";
    return nullptr;
#endif
  }
};

}  // namespace

std::unique_ptr<runtime::Backend> make_eager_backend() { return std::make_unique<EagerBackend>(); }
std::unique_ptr<runtime::Backend> make_cudagraphs_backend() { return std::make_unique<CudaGraphsBackend>(); }

}  // namespace kiln::backends
