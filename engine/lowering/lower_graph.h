// Lowering: a captured region's FX-style graph → the loop-level IR.
//
// lower_graph(graph)
//   pre:  graph is a region graph from capture (placeholders, get_attr, call_function, output;
//         no control flow). Tensor metas carry dtype and (possibly symbolic) shapes.
//   post: every tensor value is a computation: pointwise (views are index arithmetic, the
//         decomposition table turns batch_norm, layer_norm, softmax, gelu, ... into primitives),
//         reduction, extern (GEMM/convolution through LibTorch) or fallback (an op without a
//         lowering: it runs through LibTorch and is reported, it does not break the graph).
//         Non-tensor nodes (sizes and their arithmetic) are host ops, listed in host_ops.
//         With options.attention, each attention chain (attention.h) is one extern
//         kiln::scaled_dot_product_attention named after its last product; the chain's other nodes and the
//         views only it read are not lowered, and `notes` says what each call replaced.
//         With options.depthwise, a depthwise conv2d is a pointwise computation (its window's taps summed),
//         not an extern. With options.pool_windows, a max_pool2d of at most 49 taps is a pointwise computation
//         (the max of its window's taps), not a reduction.
//   error: LoweringError when the region cannot be lowered at all (the backend then runs it eagerly).
#pragma once

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/ir/graph.h"
#include "engine/lowering/loop_ir.h"

namespace kiln::lowering {

struct LoweringError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct LoweredRegion {
  LoopProgram program;
  std::vector<int> host_ops;        // IR node indices of non-tensor nodes, in order
  std::vector<std::string> fallbacks;  // "aten::foo (at node bar): no lowering"
  std::map<std::string, int> tensor_of;  // IR value name → the computation holding it
  // Host-op results known at compile time (a rank, a dtype, a size or arithmetic on sizes,
  // a comparison of static numbers), by IR value name: the runtime binds them without running the
  // op, whose tensor argument may be one the region's kernels have not computed yet.
  struct HostValue {
    Sym value;
    bool is_bool = false;
  };
  std::map<std::string, HostValue> host_values;
  std::vector<std::string> notes;  // what lowering rewrote, one "# ..." line each (dumped above the loop IR)
};

struct LowerOptions {
  // Attention chains become one kiln::scaled_dot_product_attention extern (attention.h): those of float16 and
  // bfloat16, and with attention_float32 float32's too.
  bool attention = false;
  bool attention_float32 = false;
  // Depthwise convolutions (one filter per channel, small windows) as generated arithmetic instead of a cuDNN call:
  // their epilogue (batch norm, activation) then fuses into the same kernel, and default mode launches a kernel
  // where it made a library call.
  bool depthwise = false;
  // max_pool2d windows (constant sizes, at most 49 taps) as one pointwise computation, the max of the taps written
  // out, instead of a reduction over each window: the code generators then treat it as a window (fusion's
  // reads_a_window), and a CUDA thread takes neighbouring outputs along the width, the taps they share loaded, and
  // what is inlined into them computed, once.
  bool pool_windows = false;
};

LoweredRegion lower_graph(const ir::Graph& graph, const LowerOptions& options = {});

}  // namespace kiln::lowering
