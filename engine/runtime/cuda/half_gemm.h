// Kiln's own products of 16-bit matrices on the GPU (codegen::half_gemm_source), for default mode.
//
// In default mode a region is host-bound wherever its products are small: each cuBLAS call costs ~17 us of host
// time on the H100's host (LibTorch's mm; cuBLASLt's matmul with its plan kept alike: bench/extern_probe.cpp), while
// a product of BERT-base's 1024 tokens by 768 takes ~4 us on the device. A generated kernel's launch costs ~8 us
// (bench/product_probe.cpp). Whether that wins depends on the kernel's device time: it did not on any problem
// measured, with two pipeline stages (19 against cuBLAS's 4.3 us at 1024x768x768, 68 against 12 at k = 3072) nor
// with four (16.3 against 4.35, 56.1 against 10.6): more than the ~9 us of host it saves. So default mode uses these
// kernels only where asked: --products kiln (every 16-bit product they take, every mode) or
// KILN_OWN_PRODUCT_MAX_GFLOP=x (default mode's products of at most x Gflop: own_products.h).
// The results equal cuBLAS's bit for bit on every problem the probe ran (float32 accumulation over the whole of
// k, rounded once to the output's type to nearest even).
//
// half_gemms(max_flop, bf16)
//   post: an OwnProduct (direct_extern.h) whose mm(a, b) computes a [m, k] · b [k, n] for CUDA tensors of one
//         16-bit type (bfloat16 or float16, as asked), a row-major and contiguous, b either row-major or the transpose of a row-major [n, k]
//         matrix (a linear's weight, w.t()), k and n multiples of 8, every data pointer 16-byte aligned, m·n·k > 0
//         and 2·m·n·k <= max_flop (0: no bound); its result a new row-major [m, n] tensor. Undefined for anything
//         else (the caller's cuBLAS path runs). The kernels compile once per process (NVRTC, the kernel cache on
//         disk), here, not on the first product; tile 128×64 where that still gives every multiprocessor a
//         block, else 64×64.
// half_gemm_kernel(kernel)
//   post: the same, computed by that one kernel (codegen::half_gemm_candidates: its tile and fragment form; b in
//         its layout, else undefined) without a bound: for the probe and the GPU tests, which time and check every
//         candidate.
// half_gemm_calls()  how many products this process computed with these kernels.
//
#pragma once

#include <cstdint>
#include <memory>

#include "engine/codegen/cuda/gemm_template.h"
#include "engine/runtime/direct_extern.h"
#include "engine/runtime/own_products.h"  // default mode's bound

namespace kiln::runtime {

std::shared_ptr<OwnProduct> half_gemms(double max_flop, bool bf16);  // bf16: bfloat16's kernels, else float16's
std::shared_ptr<OwnProduct> half_gemm_kernel(const codegen::HalfGemmKernel& kernel);
uint64_t half_gemm_calls();

}  // namespace kiln::runtime
