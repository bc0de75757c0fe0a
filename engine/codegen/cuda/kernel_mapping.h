// How each fused kernel maps onto the GPU, decided from the loop IR alone: elements per thread
// for pointwise kernels (4 when the innermost stored size allows float4), and for row kernels one
// warp, one block or one thread per row. Pure functions, shared by the CUDA emitter (which spells
// the chosen form) and its tests.
#pragma once

#include <cstdint>
#include <optional>

#include "engine/fusion/schedule.h"

namespace kiln::codegen {

// Elements per thread of a pointwise kernel: 4 when the innermost stored size is a multiple of 4.
int vector_width(const fusion::FusedProgram& p, const fusion::FusedKernel& k);
// Outputs per thread of a window's pointwise kernel (a depthwise convolution, fusion::reads_a_window; or a
// layout_copy) taken along its width (dim 3 of a constant 4-d iteration space stored with another dim innermost,
// channels-last): for a depthwise convolution's window the first of 8, 4, 7, 6, 5 and 2 that divides the width, else
// the whole width when it is at most 8, else 1; for a pooling's window or a layout copy 4 or 2 when the width is a
// multiple of it, else the whole width up to 8, else 1 (a pooling's kernel already streams near the memory's bandwidth:
// ResNet's stem pooling read its map at 3.9 TB/s on the H200). The outputs of one thread read mostly the same taps, loaded once: on the H200, EfficientNet-B0's windows
// with their batch norm and SiLU ran 1.5-3x faster than one output per thread (bench/gpu/probes/window_kernels.cu),
// and with 2 outputs along the height as well (window_height) ConvNeXt-T's 7x7 windows at batch 8 ran 1.3-1.7x
// faster than 4 or 2 along the width alone (14x14 maps: 7x2 outputs 7.5 µs against 2x1's 12.9; 28x28: 4x2 10.7 µs
// against 7x2's 12.0 and 4x1's 14.1; 56x56: 8x2 17.3 against 4x2's 18.5 and 4x1's 23.6). 1 for every other kernel.
int window_rows(const fusion::FusedProgram& p, const fusion::FusedKernel& k);
// Outputs per thread of a depthwise convolution's window kernel along its height, each of them window_rows along the
// width: 2 when the height is even, else 1 (and 1 for a pooling's window, a layout copy or any other kernel;
// max-autotune races 2 for a pooling's window).
int window_height(const fusion::FusedProgram& p, const fusion::FusedKernel& k);
// A copy into another storage order: one 4-d computation whose body is a load, at its own position, of a realized
// buffer stored with dim 3 innermost (a conv weight copied channels-last, lowering::copy_conv_weights_per_call). Such
// a kernel takes window_rows outputs per thread too: each thread reads its neighbouring values of dim 3 (one sector)
// where one output per thread read each sector for one value only (ResNet-18's 3x3 weights at batch 8 on the H200:
// 12.9 µs for a 9.4 MB weight, 1.5 TB/s).
bool layout_copy(const fusion::FusedProgram& p, const fusion::FusedKernel& k);
// Channels per thread a window's kernel can take: 4 when every computation is float32, stored channel (dim 1)
// innermost with the channels a multiple of 4 (each tap, weight and per-channel parameter read along the channels
// then moves as one float4 when the buffers are 16-byte aligned, and each output group is stored as float4s); else
// 1. Only max-autotune's candidates take 4: on the H200 it ran some windows 5-20 % faster (efficientnet_b0's first,
// mobilenet_v3_small's 5x5 ones on 14x14 maps) and most others 5-100 % slower than one channel per thread.
int window_lanes(const fusion::FusedProgram& p, const fusion::FusedKernel& k);
// A row kernel whose every loop is at most 1024 long runs one warp per row.
bool warp_per_row(const fusion::FusedProgram& p, const fusion::FusedKernel& k);
// A row kernel of reductions over many rows of at most 16 values (pooling windows) runs one thread
// per row.
bool column_reduction(const fusion::FusedProgram& p, const fusion::FusedKernel& k);
// Row tiles, for a row kernel of reductions over constant sizes whose loads step one element from
// row to row and more along the row (a channels-last pooling: the rows are channels, neighbours in
// memory), rows longer than 16, with at most pointwise computations of one element per row after
// the reductions (the pooled value's [N, C, 1, 1] view): a block takes `width` neighbouring rows (8,
// 16 or 32: narrower when there are few rows, so that more blocks share them) and its `threads` split
// each row into blockDim / width slices of about 8 values; the slices' partial results meet by warp
// shuffles, then in shared memory. width 0 for every other kernel. The kernel's own form from 512 rows
// when the rows are longer than 1024 values or hold 400,000 values together.
struct RowTile {
  int width = 0;
  int threads = 0;  // the block size it launches with unless autotuning picks another
  bool reductions_only = false;  // no per-row epilogue: one thread per row can run it too
  // The kernel's own form (rows longer than 1024 values, 512 rows or more); otherwise the tiles
  // are only an autotuning candidate beside the other row forms.
  bool preferred = false;
};
RowTile row_tile(const fusion::FusedProgram& p, const fusion::FusedKernel& k);

// A pointwise kernel that transposes: one float computation of constant sizes whose every load
// from another buffer steps one element along loop variable `in` and more than one along `out`,
// the variable its own storage walks innermost (attention's key transposed for matmul). Such a
// kernel runs in 32x32 tiles through shared memory: read along `in`, written along `out`, both
// coalesced. Empty when the kernel is anything else or either size is under 16.
struct TransposeVars {
  int out = -1;
  int in = -1;
};
std::optional<TransposeVars> transpose_vars(const fusion::FusedProgram& p, const fusion::FusedKernel& k);

}  // namespace kiln::codegen
