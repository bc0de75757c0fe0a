// The compiler's front half for one captured region, as a flat list of named passes run by one
// driver (the shape of Halide's Lower.cpp):
//
//   lower     graph -> loop IR: decompositions, views as index arithmetic, externs   10_lowered.txt
//   layout    storage order of convolution chains (channels-last where chosen), then   20_loops_before_fusion.txt
//             linears' bias to their readers and long poolings split (where asked)
//   schedule  which computations share a kernel, and why not                         21_loops_after_fusion.txt
//                                                                                    22_fusion_decisions.txt
//   plan      buffer lifetimes, shared slots, planned peak (fusion/memory_plan.h)    23_memory_plan.txt
// run_front_end(graph, options, art)
//   post: every pass is timed into art.stage_ms under its name, its output dumped into art.stages
//         (file names from stages.h, after the captured graph's 00_captured.txt), and the loop IR
//         verified after it (lowering::verify). Code generation and compilation (C++ or CUDA) follow
//         in the backend on the returned program.
//   error: lowering::LoweringError when a graph cannot be lowered or a pass leaves loop IR that
//          does not verify (naming the pass); the backend then runs the region eagerly.
#pragma once

#include <string>
#include <vector>

#include "engine/fusion/memory_plan.h"
#include "engine/fusion/schedule.h"
#include "engine/ir/graph.h"
#include "engine/lowering/lower_graph.h"
#include "engine/runtime/backend.h"

namespace kiln::pipeline {

struct FrontEndOptions {
  bool fuse = true;            // false: one kernel per computation (aot_eager)
  // Fusion may recompute a producer in each of its few readers (fusion::FusionOptions::recompute_limit):
  // on the GPU, where those kernels are bound by bytes; off on the CPU, where the recomputed arithmetic
  // (a SiLU's exp) costs more than the buffer it saves (mobilenet_v3_small 8-15 % slower with it).
  bool recompute = true;
  bool row_stages = true;      // false: no stages join a row kernel (fusion::FusionOptions::stage_rows)
  bool channels_last = false;  // store convolution chains NHWC
  bool gemm_epilogues = false; // a GEMM may run the kernel after it (max-autotune on the GPU): plan its buffers early
  // Channels-last convolutions' constant weights: converted once and a copy kept with the region
  // (Kept), converted by LibTorch in each call (PerCall), or kept only while the copies are no larger
  // than the activations eager would hold for the region (KeptWithinEager: lowering::eager_activation_peak;
  // kept when a size is symbolic). The layout pass's dump says which and why.
  enum class ConvWeights { Kept, PerCall, KeptWithinEager };
  ConvWeights conv_weights = ConvWeights::Kept;
  // With weights converted per call: channels-last only while the conv weights are no larger than eager's
  // activations; otherwise the region stays row-major (each call would convert more weight bytes than its
  // convolutions move in activations: ResNet-18 at batch 1).
  bool row_major_when_weights_dominate = false;
  // Attention chains as one scaled_dot_product_attention call each (lowering/attention.h); float32 ones too
  // with attention_float32.
  bool attention = false;
  bool attention_float32 = false;
  // Each attention call runs on every region call without a CUDA graph (default mode on the GPU): its host cost
  // counts (lowering::Comp::attn_host_bound).
  bool attention_host_bound = false;
  bool depthwise = false;  // depthwise convolutions as generated arithmetic (lowering::LowerOptions::depthwise)
  bool pool_windows = false;  // max_pool2d windows as pointwise computations (lowering::LowerOptions::pool_windows)
  bool linear_bias_in_readers = false;  // linears read only by pointwise work leave their bias to it (lowering/linear_bias.h)
  // Long reductions over few neighbouring rows (channels-last poolings) in two steps (lowering/split_reduction.h).
  bool split_reductions = false;
};

struct FrontEnd {
  lowering::LoweredRegion lowered;
  fusion::FusedProgram fused;
  fusion::MemoryPlan plan;  // what the runtime allocates and frees around each step
};

FrontEnd run_front_end(const ir::Graph& graph, const FrontEndOptions& options, runtime::RegionArtifacts& art);

// The pass names, in order ("lower", "layout", "schedule", "plan").
std::vector<std::string> front_end_passes();

}  // namespace kiln::pipeline
