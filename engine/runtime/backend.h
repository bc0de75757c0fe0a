// Compiler backends behind one interface. A backend takes a captured region (its graph and the
// TorchScript nodes behind it) plus options and returns a compiled callable and its artefacts
// (graphs per stage, kernels with source and provenance, fusion decisions).
//
// Built-in backends (engine/backends/: eager, aot_eager, kiln, cudagraphs, and the whole-model
// torchscript peer) are registered by the
// commands (backends::register_builtin_backends); others load from a shared library that exports
// `extern "C" void kiln_register_backends()` (load_backend_plugin).
#pragma once

#include <functional>
#include <memory>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/capture/interpreter.h"
#include "engine/capture/partition.h"
#include "engine/capture/specialize.h"
#include "engine/model/model.h"
#include "engine/records/records.h"

namespace kiln::runtime {

struct BackendOptions {
  std::string mode = "default";  // default, reduce-overhead, max-autotune
  // Storage of convolution chains: "auto" (channels-last on the GPU, where cuDNN's tensor-core
  // kernels want NHWC), "channels-last" or "contiguous".
  std::string conv_layout = "auto";
  // Where a linear's bias is added (lowering/linear_bias.h): "auto" (by the pointwise work that reads
  // the product, on the GPU, except in max-autotune, which times both per linear), "epilogue" (in the
  // GEMM call) or "readers".
  std::string linear_bias = "auto";
  // Channels-last convolutions' constant weights: "kept" (converted once, a second copy held with the
  // region), "per-call" (a kernel of the region converts each before its convolution, every call) or "auto"
  // (per-call in default mode on the GPU, kept in the CUDA-graph modes, where a replayed conversion would cost
  // device time every call).
  std::string conv_weights = "auto";
  // Whether a row kernel takes in the pointwise kernel before it and epilogues folding its rows
  // (fusion::FusionOptions::stage_rows): "auto", or "separate" (each its own kernel, for an A/B).
  std::string row_stages = "auto";
  // Whether attention chains run as one scaled_dot_product_attention call (lowering/attention.h): "auto"
  // (float16 and bfloat16 ones on the GPU), "fused" (float32 ones too, and on the CPU, where the call runs
  // eager's own steps) or "separate" (products, mask and softmax as they are written, for an A/B).
  std::string attention = "auto";
  // Whether depthwise convolutions become generated arithmetic (lowering::LowerOptions::depthwise): "auto" (in
  // default mode on the GPU), "generated" (every mode, the CPU too) or "extern" (LibTorch's convolution, an A/B).
  std::string depthwise = "auto";
  // Whether long reductions over few channels-last rows are split in two (lowering/split_reduction.h): "auto" (on the
  // GPU), "on" (the CPU too) or "off" (one pass, for an A/B).
  std::string split_reductions = "auto";
  // Whether max_pool2d windows are pointwise computations of their taps (lowering::LowerOptions::pool_windows):
  // "auto" (on the GPU), "on" (the CPU too) or "off" (a reduction over each window, for an A/B).
  std::string pool_windows = "auto";
  // Who computes a region's matrix products of 16-bit matrices on the GPU (runtime/cuda/half_gemm.h): "auto"
  // (cuBLAS; in default mode Kiln's own tensor-core kernel for products up to KILN_OWN_PRODUCT_MAX_GFLOP where that
  // is set), "library" (cuBLAS always) or "kiln" (Kiln's kernel for every product it takes, in every mode).
  std::string products = "auto";
  // Not empty ("sm_90"): the kiln backend builds each region's CUDA kernels for that architecture as the GPU's
  // default mode would (NVRTC needs no GPU), and the region runs eagerly where it was captured; its artifacts
  // (kernels, stage dumps, the compiler's runs) say what the GPU would get.
  std::string cuda_build_arch;
};

struct StageDump {
  std::string file;  // "00_captured.txt"
  std::string text;
};

// One compiled GPU function's registers per thread and stack frame, from its CUBIN (codegen/cuda/cubin_info.h).
struct FunctionResources {
  std::string function;  // a kernel, or one of max-autotune's forms of it ("k1_conv2d_c4")
  int registers = 0;
  int64_t stack_bytes = 0;  // local memory per thread: spilled registers, or a local array
};

struct RegionArtifacts {
  std::vector<StageDump> stages;
  std::vector<records::Kernel> kernels;
  std::vector<records::FusionDecision> decisions;
  std::vector<std::string> externs;    // extern calls (GEMM/conv through LibTorch)
  std::vector<std::string> fallbacks;  // ops without a lowering, run through LibTorch
  std::vector<std::pair<std::string, double>> stage_ms;  // "lower", "layout", "schedule", "plan", "emit", "compile", "load"
  bool cache_hit = false;              // the compiled library came from the disk cache
  int compiler_invocations = 0;
  std::vector<double> compile_unit_ms;  // each compiler run's time (cache misses; runs side by side sum past the wall)
  int compile_workers = 1;              // processes those runs were shared among
  int compile_assembled = 0;            // of those runs, the ones that only assembled the PTX of a kernel of the same code
  std::vector<FunctionResources> function_resources;  // every CUDA function built (forms included); empty on the CPU
  std::string note;                    // e.g. why the region runs eagerly
};

class CompiledFn {
 public:
  virtual ~CompiledFn() = default;
  // Reads the region's inputs from env, writes its outputs into env.
  virtual void run(capture::Interpreter& interp, capture::Interpreter::Env& env) = 0;
  // Messages since the last call (CUDA graph records, replays and skips), turned into events.
  virtual std::vector<std::string> take_log() { return {}; }
  // Per kernel (in artifacts order): the launch configurations tried and their times.
  virtual std::vector<std::vector<records::AutotuneCandidate>> autotune() const { return {}; }
  // Drops the CUDA graphs recorded so far, so the next call records them again (a profiler whose
  // graph-level records must see a graph made); false when it holds none.
  virtual bool record_graphs_again() { return false; }
};

// A model compiled whole by a peer's own compiler (TorchScript's optimize_for_inference), outside
// Kiln's capture: the profile measures it beside Kiln's modes.
class CompiledModel {
 public:
  virtual ~CompiledModel() = default;
  virtual c10::IValue forward(const std::vector<c10::IValue>& args) = 0;
  // The peer compiler's own time; loading the archive onto the device is not part of it (Kiln's
  // compile times start from a loaded model too).
  double compile_ms = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  // A whole-model peer compiles the module itself (compile_model) and never sees captured regions:
  // the captured runtime refuses it by name, kiln profile --backends runs it.
  virtual bool whole_model() const { return false; }
  // Whole-model peers: the model loaded onto `device` ("cpu", "cuda") and compiled; throws kiln::Error.
  virtual std::unique_ptr<CompiledModel> compile_model(const model::Model& model, const std::string& device) {
    (void)model;
    (void)device;
    return nullptr;
  }
  // Returns null when the region should run through the captured trace as is (eager).
  virtual std::unique_ptr<CompiledFn> compile(const capture::SpecializedRegion& entry, const capture::RegionStatic& region,
                                              const BackendOptions& options, RegionArtifacts& artifacts) = 0;
};

using BackendFactory = std::function<std::unique_ptr<Backend>()>;

void register_backend(const std::string& name, BackendFactory factory);
// Throws kiln::Error naming the backend and listing the known ones.
std::unique_ptr<Backend> make_backend(const std::string& name);
std::vector<std::string> backend_names();
// dlopens `path` and calls its kiln_register_backends(); throws kiln::Error naming the file.
void load_backend_plugin(const std::string& path);

}  // namespace kiln::runtime
