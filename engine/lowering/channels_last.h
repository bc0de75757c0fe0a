// Layout choice for convolutions: channels-last (NHWC) storage through a region's conv chains.
//
// GPU convolutions run on tensor cores in NHWC; fed NCHW tensors, cuDNN transposes every input,
// weight and output around each call. choose_channels_last rewrites layouts only (no values):
//
// choose_channels_last(program)
//   pre:  program verifies (lowering's output, before fusion).
//   post: every 4-d convolution extern stores its output channels-last ({0, 2, 3, 1}) and reads
//         its weight channels-last (the runtime converts a constant once and keeps it; with
//         weight_copies false a constant weight keeps its layout, copy_conv_weights_per_call below); its
//         input, when computed in the region by a pointwise computation, is stored channels-last;
//         4-d pointwise computations that read a channels-last buffer of their own shape at their
//         own position follow it (so conv → batch_norm → relu → add stays NHWC end to end and
//         every kernel reads and writes contiguously), as do max-pool reductions and pooling
//         fallbacks of a channels-last input; so does a 4-d pointwise computation (not a view, not [N, C, 1, 1])
//         more of whose reads, followed through views to the buffer they land in, walk the channel innermost than
//         the width (ConvNeXt's blocks: the add after permute(0, 3, 1, 2) of a linear's [N, H, W, C] rows, and a
//         depthwise convolution reading a layer norm's rows through a permute, its filters then [KH, KW, 1, C]).
//         Region outputs keep the row-major layout callers get from eager.
//   returns the number of computations given a layout.
#pragma once

#include "engine/lowering/lower_graph.h"
#include "engine/lowering/loop_ir.h"

namespace kiln::lowering {

// weight_copies false: constant weights keep their layout, each converted for its call (a transient copy per
// call instead of a second copy of every weight kept with the region: the memory of default mode, where no
// CUDA graph replays the conversion for free; copy_conv_weights_per_call makes the copies the region's kernels).
int choose_channels_last(LoopProgram& program, bool weight_copies = true);

// After choose_channels_last(region.program, false): each constant weight of a channels-last convolution that
// channels-last storage would reorder (its channels and its window both longer than one) is read through a new
// Pointwise computation copying it channels-last (target aten::contiguous, named after the weight with
// "_channels_last"), inserted right before the first convolution reading it; that one and every later reader read
// the copy. The region's own kernel converts the weight each call into a buffer the memory plan reuses, where
// LibTorch's convolution would have converted it with a general strided copy (ResNet-18 at batch 8 on the H200:
// 17 such copies took 0.103 of the call's 0.52 ms of device time). Comp indices after an insertion shift by one
// everywhere. Returns the number of copies made.
int copy_conv_weights_per_call(LoweredRegion& region);

// Bytes of the channels-last copies choose_channels_last(program, true) would keep: the constant
// weights of the 4-d convolutions it converts. -1 when a size is symbolic.
int64_t conv_weight_copy_bytes(const LoopProgram& program);

// The most bytes of intermediate results live at once when the program's computations run one by one
// in order, each result in its own buffer freed after its last reader (region inputs and constants not
// counted, views free): an estimate of what eager holds for the same graph, as a yardstick for memory
// Kiln adds. -1 when a size is symbolic.
int64_t eager_activation_peak(const LoopProgram& program);

// True for the aten ops the pass treats as 2-d convolutions.
bool is_conv2d_target(const std::string& target);

}  // namespace kiln::lowering
