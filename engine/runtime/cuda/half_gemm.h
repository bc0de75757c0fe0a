// Kiln's own products of 16-bit matrices on the GPU (codegen::half_gemm_source), for default mode.
//
// In default mode a region is host-bound wherever its products are small: each cuBLAS call costs ~20 us of host
// time on the H100's host (LibTorch's mm or cuBLASLt's matmul with its plan kept alike: bench/extern_probe.cpp),
// while a product of BERT-base's 1024 tokens by 768 takes a few microseconds on the device. A generated kernel is
// one cuLaunchKernel (~3-4 us). So for a bfloat16 or float16 product whose work is at most `max_flop` (2·m·n·k),
// the region launches Kiln's tensor-core kernel instead (float32 accumulation over the whole of k, rounded once
// to the output's type: no reduced-precision reduction, as cuBLAS is allowed by PyTorch's default).
//
// half_gemms(max_flop, bf16)
//   post: an OwnProduct (direct_extern.h) whose mm(a, b) computes a [m, k] · b [k, n] for CUDA tensors of one
//         16-bit type (bfloat16 or float16, as asked), a row-major and contiguous, b either row-major or the transpose of a row-major [n, k]
//         matrix (a linear's weight, w.t()), k and n multiples of 8, every data pointer 16-byte aligned, m·n·k > 0
//         and 2·m·n·k <= max_flop (0: no bound); its result a new row-major [m, n] tensor. Undefined for anything
//         else (the caller's cuBLAS path runs). The kernels compile once per process (NVRTC, the kernel cache on
//         disk), here, not on the first product; tile 128×64 where that still gives every multiprocessor a
//         block, else 64×64.
// half_gemm_calls()  how many products this process computed with these kernels.
//
// KILN_OWN_PRODUCT_MAX_GFLOP=x overrides default mode's bound (own_product_max_flop), for an A/B.
#pragma once

#include <cstdint>
#include <memory>

#include "engine/runtime/direct_extern.h"

namespace kiln::runtime {

std::shared_ptr<OwnProduct> half_gemms(double max_flop, bool bf16);  // bf16: bfloat16's kernels, else float16's
uint64_t half_gemm_calls();

// Default mode's bound on a product Kiln computes itself (2·m·n·k), KILN_OWN_PRODUCT_MAX_GFLOP if set.
double own_product_max_flop();

}  // namespace kiln::runtime
