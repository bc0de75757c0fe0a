// A tiled GEMM for `linear` (C = A · Wᵀ + bias) on tensor cores in TF32, with the bias fused into
// the epilogue: a max-autotune candidate beside cuBLAS. Pure text; compiled with NVRTC.
//
// gemm_tf32_source(config)
//   post: one `extern "C" __global__` function named gemm_name(config) taking one KilnGemmArgs by
//         value {a, w, bias (may be null), c, m, n, k}; A is m×k and W n×k, both row-major float32,
//         C m×n row-major. A 1-D grid of ceil(m/bm)·ceil(n/bn) blocks of 128 threads (2×2 warps,
//         each a (bm/2)×(bn/2) tile of mma.sync m16n8k8 TF32 operations, fp32 accumulation);
//         operand tiles of bk=32 staged in shared memory; edges guarded (any m, n, k). With an
//         epilogue, every element of C is also handed to the fused pointwise code (gemm_epilogue.h).
#pragma once

#include <string>

namespace kiln::codegen {

struct GemmConfig {
  int bm = 64;  // block tile rows (multiple of 32)
  int bn = 64;  // block tile columns (multiple of 16)
};

// The pointwise kernel after a GEMM, run inside the template's epilogue instead of on its own.
struct GemmEpilogue {
  std::string prelude;  // what `code` needs: the region's KilnArgs and helpers (its CUDA prelude)
  std::string code;     // statements per element, with gr, gc (row, column), v (A·Wᵀ + bias) and
                        // args (the region's KilnArgs) in scope
  std::string kernel;   // the kernel it replaces ("k1_relu"): names the function
};

std::string gemm_name(const GemmConfig& c, const GemmEpilogue* epi = nullptr);  // "kiln_gemm_tf32_64x64[_k1_relu]"
// With `epi`, the function takes one KilnGemmEpilogueArgs {KilnGemmArgs g; KilnArgs args;} and
// runs the epilogue code after storing C.
std::string gemm_tf32_source(const GemmConfig& c, const GemmEpilogue* epi = nullptr);
std::string gemm_config_text(const GemmConfig& c);  // "Kiln TF32 template, tile 64x64x32, 4 warps"

}  // namespace kiln::codegen
