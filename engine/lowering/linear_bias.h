// Where a linear's bias is added: in the GEMM (cuBLASLt's bias epilogue) or by the computations
// that read its result.
//
// On the GPU, cuBLAS picks its tiles for a plain product better than for one with a bias epilogue
// (float32 ViT-B/16 on an H100: 64x64 tiles with the epilogue, 128x128 without, 11.5 against
// 7.4 ms per iteration of GEMMs), and the bias costs a reader one more load of a vector it reads
// beside the product. So a linear whose result only pointwise computations and reductions read
// runs without its bias, and each reader adds it where it loads the result (the choice Inductor
// makes for an addmm followed by pointwise work).
//
// move_linear_bias_to_readers(program)
//   pre:  program verifies (lowering's output, before fusion).
//   post: every aten::linear extern, and every aten::addmm with beta = alpha = 1 (Conv1D layers,
//         GPT-2's), with a 1-d tensor bias of its dtype and last size, that is not
//         a region output and whose every reader is a pointwise computation or a reduction (views
//         included: a realized view is a kernel's copy; not an extern), has drop_bias set (the
//         runtime calls it without the bias: linear(x, w), mm(a, b)) and each
//         of its readers' loads of it became load + bias[last index]; the bias is among the
//         readers' deps. Values are unchanged up to float rounding; other linears are untouched.
//         aten::conv2d externs (4-d) with a bias of their channels' size are treated alike, the bias
//         added at index[1] of each load: cuDNN adds a convolution's bias with a kernel of its own
//         (ATen's broadcast add: 18 launches per call in mobilenet_v3_small's squeeze-excitation
//         blocks, 32 in efficientnet_b0's), which the reading kernel then does for free.
//         A reader loading the product with fewer indices than its rank keeps the bias where it is.
//   returns the number of linears and convolutions changed.
#pragma once

#include "engine/lowering/loop_ir.h"

namespace kiln::lowering {

int move_linear_bias_to_readers(LoopProgram& program);

}  // namespace kiln::lowering
