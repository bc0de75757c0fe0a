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
// A row kernel whose every loop is at most 1024 long runs one warp per row.
bool warp_per_row(const fusion::FusedProgram& p, const fusion::FusedKernel& k);
// A row kernel of reductions over many short or column-like rows runs one thread per row.
bool column_reduction(const fusion::FusedProgram& p, const fusion::FusedKernel& k);
// The longest row a row kernel loops over (0 when symbolic).
int64_t longest_row(const fusion::FusedProgram& p, const fusion::FusedKernel& k);

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
