// The eager backend: the captured region's ops one by one through LibTorch (the trace capture
// recorded). Also the home of the built-in backend registration.
#include "engine/runtime/backend.h"
#include "engine/ir/print_text.h"
#include "engine/backends/kiln/kiln_backend.h"
#if KILN_WITH_CUDA
#include "engine/runtime/cuda/cuda_graph_fn.h"
#endif

namespace kiln::backends {

namespace {

class EagerBackend : public runtime::Backend {
 public:
  std::string name() const override { return "eager"; }
  std::unique_ptr<runtime::CompiledFn> compile(const capture::CompiledRegion& entry, const capture::RegionStatic&,
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
  std::unique_ptr<runtime::CompiledFn> compile(const capture::CompiledRegion& entry, const capture::RegionStatic& region,
                                               const runtime::BackendOptions&, runtime::RegionArtifacts& art) override {
    art.stages.push_back({"00_captured.txt", ir::to_readable(entry.info.graph)});
#if KILN_WITH_CUDA
    return runtime::make_cuda_graph_fn(runtime::make_trace_fn(entry), region.inputs, region.outputs);
#else
    (void)region;
    art.note = "this Kiln was built without the CUDA toolkit; region runs eagerly";
    return nullptr;
#endif
  }
};

}  // namespace

}  // namespace kiln::backends

namespace kiln::runtime {

void register_builtin_backends() {
  register_backend("eager", [] { return std::make_unique<backends::EagerBackend>(); });
  register_backend("aot_eager", [] { return backends::make_kiln_backend(/*fuse=*/false); });
  register_backend("kiln", [] { return backends::make_kiln_backend(/*fuse=*/true); });
  register_backend("cudagraphs", [] { return std::make_unique<backends::CudaGraphsBackend>(); });
}

}  // namespace kiln::runtime
