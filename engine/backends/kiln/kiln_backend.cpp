#include "engine/backends/kiln/kiln_backend.h"
#include "kiln_build_config.h"

#include <optional>

#include "engine/backends/kiln/cpp_target.h"
#include "engine/backends/kiln/cuda_target.h"
#include "engine/pipeline/pipeline.h"
#include "engine/runtime/float_precision.h"
#include "engine/runtime/lowered_region.h"

namespace kiln::backends {

namespace {

bool runs_on_gpu(const ir::Graph& graph) {
  for (const auto& n : graph.nodes)
    if (n.op == ir::NodeOp::Placeholder && !n.outputs.empty() && n.outputs[0].meta.device.rfind("cuda", 0) == 0)
      return true;
  return false;
}

// A thin adapter over the compiler pipeline (pipeline/pipeline.h): picks the target from the
// region's device and wraps the compiled kernels in the region's callable.
class KilnBackend : public runtime::Backend {
 public:
  explicit KilnBackend(bool fuse) : fuse_(fuse) {}
  std::string name() const override { return fuse_ ? "kiln" : "aot_eager"; }

  std::unique_ptr<runtime::CompiledFn> compile(const capture::SpecializedRegion& entry, const capture::RegionStatic& region,
                                               const runtime::BackendOptions& options,
                                               runtime::RegionArtifacts& art) override {
    const ir::Graph& graph = entry.info.graph;
    const bool on_gpu = runs_on_gpu(graph) || !options.cuda_build_arch.empty();
    pipeline::FrontEndOptions fe;
    fe.fuse = fuse_;
    fe.channels_last = options.conv_layout == "channels-last" || (options.conv_layout == "auto" && on_gpu);
    fe.gemm_epilogues = on_gpu && options.mode == "max-autotune";
    fe.recompute = on_gpu;
    // A pooling over few long channels-last rows sums parts of each row first, so that its tiles fill the GPU
    // (efficientnet_b0 at batch 8: 256 rows of 12544 values; lowering/split_reduction.h). "on" asks for it on the
    // CPU too (a check of the rewrite where there is no GPU).
    fe.split_reductions = fuse_ && (options.split_reductions == "on" || (on_gpu && options.split_reductions == "auto"));
    fe.row_stages = options.row_stages != "separate";
    // On the GPU a 16-bit attention chain is one fused attention kernel. Asked for ("fused"), float32 chains
    // too, and on the CPU, where the call runs the same ATen steps eager runs (runtime/direct_extern.h),
    // giving up Kiln's kernel for the mask and softmax: a check of the rewrite where there is no GPU.
    fe.attention = fuse_ && (options.attention == "fused" || (on_gpu && options.attention == "auto"));
    fe.attention_float32 = options.attention == "fused";
    // Default mode calls each attention every call (no CUDA graph replays it): where PyTorch picks cuDNN's attention
    // for a small problem the memory-efficient kernel is called instead, its host cost a fraction of cuDNN's
    // (runtime/direct_extern.h).
    fe.attention_host_bound = on_gpu && options.mode == "default";
    // On the GPU a depthwise convolution is a generated kernel with its batch norm and activation inside. In
    // default mode a launch replaces a cuDNN call through LibTorch (~20 us of host each; default mode is host-bound:
    // efficientnet_b0 1.64 against 1.87 ms per call, H200); in the CUDA-graph modes the kernel, taking neighbouring
    // outputs per thread, saves the batch norm's and activation's pass over the convolution's result (H200,
    // reduce-overhead: efficientnet_b0 0.920 against 0.960 ms, mobilenet_v3_small 0.381 against 0.414). "generated"
    // asks for it on the CPU too (a check of the lowering where there is no GPU; there the A/B was mixed), "extern"
    // never.
    fe.depthwise = fuse_ && (options.depthwise == "generated" || (on_gpu && options.depthwise == "auto"));
    // On the GPU a max_pool2d is a window's kernel (lowering::LowerOptions::pool_windows): each thread takes
    // neighbouring outputs along the width, so the taps they share, and the batch norm and ReLU inlined into them
    // (ResNet's stem), are loaded and computed once, not once per output as a reduction over each window does.
    // "on" asks for it on the CPU too (a check of the lowering where there is no GPU).
    fe.pool_windows = fuse_ && (options.pool_windows == "on" || (on_gpu && options.pool_windows == "auto"));
    // Default mode on the GPU keeps no channels-last copy of the conv weights (a kernel converts each per
    // call): a copy of every weight would put its peak above eager's (ResNet-18 b8: 158 against 137 MiB).
    // Elsewhere they are kept while no larger than eager's activations: a conversion replayed in a CUDA
    // graph costs device time on every call (ResNet-18 b8 reduce-overhead 0.48 → 0.66 ms), but at batch 1
    // the copies would outweigh everything else (121 against eager's 88 MiB). max-autotune, the mode that spends
    // compile time and memory for speed, keeps them whatever their size: at ResNet-18 batch 1 the per-call
    // conversions were 18 kernels, 0.045 of reduce-overhead's 0.266 ms of device time on the H200.
    using CW = pipeline::FrontEndOptions::ConvWeights;
    fe.conv_weights = options.conv_weights == "kept"                             ? CW::Kept
                      : options.conv_weights == "per-call"                       ? CW::PerCall
                      : on_gpu && options.mode == "default"                      ? CW::PerCall
                      : on_gpu && options.mode == "max-autotune"                 ? CW::Kept
                                                                                 : CW::KeptWithinEager;
    // Default mode converting weights per call: row-major where the weights outweigh the activations
    // (ResNet-18 batch 1: 1.65 against 1.99 ms, peak 87.9 against 89.7 MiB; eager 87.9).
    fe.row_major_when_weights_dominate = options.conv_layout == "auto" && options.conv_weights == "auto" &&
                                         fe.conv_weights == CW::PerCall;
    // max-autotune races "the plain product, then the bias" against the epilogue per linear by timing instead
    // where its TF32 GEMM templates may run (float32 matmul precision high or medium); otherwise its linears
    // leave the bias to their readers as the other modes do, and their products' cuBLASLt algorithms are
    // timed against LibTorch's (runtime/lt_gemm.h).
    const bool gemm_templates = runtime::float32_matmul_precision() != "highest";
    fe.linear_bias_in_readers =
        options.linear_bias == "readers" ||
        (options.linear_bias == "auto" && on_gpu && (options.mode != "max-autotune" || !gemm_templates));
#if KILN_WITH_CUDA
    if (on_gpu) {
      CudaTarget target(options);
      auto code = compile_or_note(graph, entry, fe, target, art);
      return code ? target.make_region_fn(entry, region, std::move(*code), art) : nullptr;
    }
#else
    if (on_gpu) {
      art.note = options.cuda_build_arch.empty() ? "this Kiln was built without the CUDA toolkit; region runs eagerly"
                                                 : "this Kiln was built without the CUDA toolkit: no CUDA kernels to build";
      return nullptr;
    }
#endif
    auto target = make_cpp_target();
    auto code = compile_or_note(graph, entry, fe, *target, art);
    if (!code) return nullptr;
    return std::make_unique<runtime::LoweredRegionFn>(entry, region, std::move(code->front.lowered),
                                                      std::move(code->front.fused), std::move(code->loaded.calls),
                                                      code->loaded.keep, std::move(code->front.plan));
  }

 private:
  // The pipeline's result, or none when the region cannot be lowered (the note says why; it runs eagerly).
  static std::optional<pipeline::CompiledCode> compile_or_note(const ir::Graph& graph,
                                                               const capture::SpecializedRegion& entry,
                                                               const pipeline::FrontEndOptions& fe,
                                                               pipeline::Target& target, runtime::RegionArtifacts& art) {
    try {
      return pipeline::compile_region(graph, entry.info.compile_id, fe, target, art);
    } catch (const lowering::LoweringError& e) {
      art.note = std::string("lowering failed, region runs eagerly: ") + e.what();
      return std::nullopt;
    }
  }
  bool fuse_;
};

}  // namespace

std::unique_ptr<runtime::Backend> make_kiln_backend(bool fuse) { return std::make_unique<KilnBackend>(fuse); }

}  // namespace kiln::backends
