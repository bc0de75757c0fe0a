// A tiled GEMM for `linear` (C = A · Wᵀ + bias) on tensor cores in TF32, with the bias fused into
// the epilogue: a max-autotune candidate beside cuBLAS. Pure text; compiled with NVRTC.
//
// gemm_tf32_source(config)
//   post: one `extern "C" __global__` function named gemm_name(config) taking one KilnGemmArgs by
//         value {a, w, bias (may be null), c, m, n, k}; A is m×k and W n×k, both row-major float32,
//         C m×n row-major. A 1-D grid of ceil(m/bm)·ceil(n/bn) blocks of 128 threads (2×2 warps,
//         each a (bm/2)×(bn/2) tile of mma.sync m16n8k8 TF32 operations, fp32 accumulation);
//         operand tiles of bk=32 staged in shared memory; edges guarded (any m, n, k).
#pragma once

#include <string>

namespace kiln::codegen {

struct GemmConfig {
  int bm = 64;  // block tile rows (multiple of 32)
  int bn = 64;  // block tile columns (multiple of 16)
};

std::string gemm_name(const GemmConfig& c);     // "kiln_gemm_tf32_64x64"
std::string gemm_tf32_source(const GemmConfig& c);
std::string gemm_config_text(const GemmConfig& c);  // "Kiln TF32 template, tile 64x64x32, 4 warps"

}  // namespace kiln::codegen
