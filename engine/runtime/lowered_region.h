// Runs a lowered, fused region: host ops (sizes) through the interpreter, generated kernels on
// buffers LibTorch allocates, extern and fallback calls through LibTorch's own ops.
#pragma once

#include <optional>

#include <functional>
#include <map>
#include <unordered_map>
#include <vector>

#include "engine/fusion/memory_plan.h"
#include "engine/fusion/schedule.h"
#include "engine/lowering/lower_graph.h"
#include "engine/runtime/backend.h"
#include "engine/runtime/direct_extern.h"

namespace kiln::runtime {

using KernelCall = std::function<void(void* const*, const double*, const int64_t*)>;

// Strides of `sizes` stored along `layout` (a loop IR computation's storage order; row-major when empty).
std::vector<int64_t> layout_strides(const std::vector<int64_t>& sizes, const std::vector<int>& layout);

// Watches a run step by step (the accuracy checker, `kiln check`): before each step (a kernel, or
// an extern/fallback call) it may overwrite buffers the step reads, in place; after it, it reads
// what the step wrote. bufs[c] is computation c's buffer (undefined until computed).
class StepProbe {
 public:
  virtual ~StepProbe() = default;
  virtual void before_step(size_t step, std::vector<at::Tensor>& bufs) = 0;
  virtual void after_step(size_t step, const std::vector<at::Tensor>& bufs) = 0;
};

class LoweredRegionFn : public CompiledFn {
 public:
  LoweredRegionFn(const capture::SpecializedRegion& entry, const capture::RegionStatic& region,
                  lowering::LoweredRegion lowered, fusion::FusedProgram fused, std::vector<KernelCall> kernels,
                  std::shared_ptr<void> keep_alive, std::optional<fusion::MemoryPlan> plan = std::nullopt);
  void run(capture::Interpreter& interp, capture::Interpreter::Env& env) override;
  // One run under a probe; the buffers kernels write start poisoned (NaN, bools true).
  void run_probed(capture::Interpreter& interp, capture::Interpreter::Env& env, StepProbe& probe);
  // Poisons the buffers kernels write before every run, so a kernel that skips elements is caught.
  void set_poison_outputs(bool on) { poison_ = on; }
  // What an extern hook sees of the run besides the node: the kernels' argument arrays and, when
  // the next step is a kernel, a way to launch it and its computations' buffers. A hook whose call
  // also computed that kernel (a GEMM template with the kernel fused as its epilogue) sets
  // next_kernel_done, and the kernel step is skipped.
  struct ExternContext {
    void** ptrs = nullptr;  // per computation: its buffer's device pointer (what kernels read)
    const double* scalars = nullptr;
    const int64_t* syms = nullptr;
    std::vector<at::Tensor>* bufs = nullptr;
    int next_kernel = -1;               // kernel index of the following step, or -1
    std::function<void()> launch_next;  // runs that kernel on the current buffers
    bool next_kernel_done = false;
  };
  // Lets a tuner run an extern step itself (max-autotune's GEMM templates): it returns true with
  // the step's output, or false for LibTorch's op. Probed runs (kiln check) always use LibTorch.
  using ExternHook = std::function<bool(size_t comp, const torch::jit::Node* node, capture::Interpreter::Env& env,
                                        capture::Interpreter& interp, at::Tensor& out, ExternContext& cx)>;
  void set_extern_hook(ExternHook hook) { extern_hook_ = std::move(hook); }
  // max-autotune: cuDNN times its algorithms for each of the region's convolutions (benchmark mode, per shape, on
  // the first call), the flag on around those calls only and put back after each. The convolutions are called as in
  // the other modes (their prepared calls, on the region's buffers and its weight copies), not through the
  // interpreter, which would read the weights as loaded and return outputs in ATen's layout to be copied.
  void set_cudnn_benchmark(bool on) { cudnn_benchmark_ = on; }
  // max-autotune: the region's prepared products time cuBLASLt's candidate algorithms per problem
  // (lt_gemm.h) instead of taking its heuristic's first (batched matmuls are not among them: LibTorch's bmm).
  // Returns each such product's computation and its
  // tuner, whose races (LtGemm::races) the session's autotune tables show once the region has run.
  std::vector<std::pair<size_t, std::shared_ptr<LtGemm>>> tune_products();
  // The region's prepared products of matrices (those cuBLASLt may take) try `own_for(comp)` first
  // (direct_extern.h) where it returns one. Returns, per computation, whether it got one.
  std::vector<bool> use_own_products(const std::function<std::shared_ptr<OwnProduct>(const lowering::Comp&)>& own_for);

  const lowering::LoweredRegion& lowered() const { return lowered_; }
  const fusion::FusedProgram& fused() const { return fused_; }
  // When each buffer is made and given back, and which share memory (fusion/memory_plan.h).
  const fusion::MemoryPlan& memory_plan() const { return plan_; }

 private:
  void run_steps(capture::Interpreter& interp, capture::Interpreter::Env& env, StepProbe* probe);
  // Puts v into env: a computed tensor from its buffer; a list or tuple of them (an extern's
  // argument, a region output) built from its elements, as the list node itself never ran.
  // `bound` (optional) collects the values it put into env that hold computed buffers, so that the
  // caller can take them out again once the extern has run (env outlives the region).
  void bind_value(const torch::jit::Value* v, const std::vector<at::Tensor>& bufs, capture::Interpreter& interp,
                  capture::Interpreter::Env& env, std::vector<const torch::jit::Value*>* bound = nullptr) const;
  // A constant (parameter) stored in its computation's layout; converted copies are kept.
  at::Tensor constant_in_layout(size_t comp, const at::Tensor& value);
  struct LayoutCopy {
    at::Tensor source, converted;
    int64_t version = -1;
  };
  std::vector<LayoutCopy> layout_cache_;  // per computation
  std::vector<const torch::jit::Node*> graph_nodes_;
  std::unordered_map<const torch::jit::Value*, std::string> name_of_;
  std::vector<capture::InputGuardSpec> inputs_;
  std::vector<const torch::jit::Value*> region_inputs_;
  std::vector<const torch::jit::Value*> region_outputs_;
  lowering::LoweredRegion lowered_;
  fusion::FusedProgram fused_;
  fusion::MemoryPlan plan_;
  // Per call the region looks these up for every computation: indexed once here. The computation a graph value
  // is stored in; a constant's graph value; a computation's index in plan_.buffers (-1: none); and the shape of
  // a computation whose sizes are constants (no symbol to bind).
  std::unordered_map<const torch::jit::Value*, size_t> comp_of_;
  std::vector<const torch::jit::Value*> constant_value_;
  std::vector<int> planned_;
  // Per computation: the views that are its buffer permuted (fusion::FusedProgram::buffer_views).
  std::vector<std::vector<int>> views_of_;
  struct FixedShape {
    std::vector<int64_t> sizes, strides;
  };
  std::vector<std::optional<FixedShape>> fixed_;
  std::vector<std::vector<const lowering::LoweredRegion::HostValue*>> host_known_;  // per host op: its outputs' values, or empty
  std::vector<std::optional<DirectExtern>> direct_;  // an extern computation's prepared call (direct_extern.h)
  const fusion::PlannedBuffer* planned(int comp) const {
    const int i = planned_[static_cast<size_t>(comp)];
    return i < 0 ? nullptr : &plan_.buffers[static_cast<size_t>(i)];
  }
  std::vector<KernelCall> kernels_;
  std::shared_ptr<void> keep_alive_;
  std::string compile_id_;
  bool poison_ = false;
  ExternHook extern_hook_;
  bool cudnn_benchmark_ = false;
};

}  // namespace kiln::runtime
