// CUDA code generation for fused kernels (compiled with NVRTC, launched through the driver API).
//
// emit_cuda(program, notes)
//   post: one `extern "C" __global__` function per kernel taking its own KilnArgs_<name> by value
//         (the pointers of the buffers it reads or writes, CudaKernelInfo::buffers, then the region's
//         scalar inputs and size symbols; the region-wide KilnArgs in the prelude is what GEMM
//         epilogues read). Pointwise kernels are
//         grid-stride loops, 4 elements per thread when the innermost size allows 16-byte vector
//         accesses; row kernels run one warp per row when every loop of the row is at most 1024
//         long (warp shuffles), else one block per row with warp-shuffle + shared-memory block
//         reductions (softmax and layer_norm stay one kernel). A pure function (golden-tested): each
//         kernel's text is written apart (its temporaries numbered from t0) on up to the usable cores'
//         threads (KILN_EMIT_THREADS=N sets the number) and joined in the program's order, the same source
//         whatever the number.
//         With `variants` (max-autotune), pointwise kernels also get 2- and 1-element forms.
#pragma once

#include <string>
#include <vector>

#include "engine/codegen/emitted.h"
#include "engine/fusion/schedule.h"

namespace kiln::codegen {

// One compiled form of a kernel: its __global__ function and elements per thread.
struct CudaKernelVariant {
  std::string function;
  int vector_width = 1;
  bool warp_per_row = false;  // row kernels: one warp per row (blockDim/32 rows per block)
  // Row kernels: one thread per row, the row's loops run serially (column reductions, whose
  // neighbouring rows are neighbours in memory, and tiny rows such as pooling windows).
  bool thread_per_row = false;
  // Row kernels in tiles of rows (kernel_mapping.h's RowTile): a block takes `row_tile`
  // neighbouring rows and its threads split each row; `threads` is the block size it launches with
  // unless autotuning times another (0: the default).
  int row_tile = 0;
  int threads = 0;
  // Pointwise windows (kernel_mapping.h's window_rows and window_lanes): vector_width outputs per thread,
  // vector_width / (window_lanes * window_height) neighbours along the width for each of window_lanes neighbouring channels (float4s
  // along the channels when window_lanes is 4), their shared taps loaded once.
  bool window_rows = false;
  int window_lanes = 1;
  // Moves its buffers as 16-byte vectors at offsets that are multiples of 4 elements: launched only when every
  // buffer of the kernel is 16-byte aligned (another form runs otherwise).
  bool aligned16 = false;
  // Pointwise windows: outputs along the height per thread (each of them window_rows' outputs along the width), so
  // that a tall window's rows of taps are loaded once for both; vector_width counts them too.
  int window_height = 1;
};

struct CudaKernelInfo {
  std::string name;
  bool row = false;
  std::vector<lowering::Sym> range;  // pointwise: the sizes; row: the rows (outer sizes)
  int vector_width = 1;              // pointwise elements per thread (along the innermost dim; a window's outputs)
  // variants[0] is the kernel itself; with `variants` requested, pointwise kernels with 4 elements
  // per thread also come with 2 and 1 (functions "<name>_w2", "<name>_w1"), and row kernels with
  // the other row mapping ("<name>_block" or "<name>_warp"; row tiles with one thread, one warp and
  // one block per row: "<name>_thread", "_warp", "_block"; column-like rows that row tiles suit but
  // do not run by default also with "<name>_tiles" and "<name>_thread"), for autotuning.
  std::vector<CudaKernelVariant> variants;
  // Where the kernel sits in the source: its functions (variants included) are
  // [source_begin, source_end); [0, prelude_end) is what every kernel shares (types, helpers).
  size_t prelude_end = 0, source_begin = 0, source_end = 0;
  size_t function_end = 0;  // the end of variants[0]'s function: [source_begin, function_end) is the kernel's span
  // Its argument block (KilnArgs_<name>): these region buffers, in this order, then the region's
  // scalars and size symbols.
  std::vector<int> buffers;
};

std::string emit_cuda(const fusion::FusedProgram& p, const std::vector<NodeNote>& notes = {},
                      std::vector<CudaKernelInfo>* info = nullptr, bool variants = false);

// The source as one translation unit per kernel (the shared prelude + that kernel's functions),
// so kernels compile in parallel and each is cached on its own. None without kernels; [source]
// when info's offsets do not fit the source.
std::vector<std::string> cuda_units(const std::string& source, const std::vector<CudaKernelInfo>& info);

}  // namespace kiln::codegen
