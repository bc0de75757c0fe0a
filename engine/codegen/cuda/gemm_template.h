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
#include <vector>

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

// Kiln's own product of 16-bit matrices, C = A·B, for default mode's small products (runtime/cuda/half_gemm.h):
// one launch where cuBLAS's call costs tens of microseconds of host time. A is m×k row-major; B is either a
// weight's rows (W n×k row-major, B = Wᵀ: a linear's product) or a k×n row-major matrix (mm(a, b): GPT-2's
// Conv1D); C m×n row-major, of A's type. Tensor cores: mma.sync m16n8k16 on bfloat16 or float16 operands,
// float32 accumulation over the whole of k (no split, no reduced-precision reduction), rounded once to C's
// type (to nearest even). Tiles of bm×bn×32 staged in shared memory by 16-byte asynchronous copies, up to four
// stages (half_gemm_stages: three tiles load while one multiplies; with two, a long k waited on memory for every
// tile: 68 against cuBLAS's 12 µs for 1024×768×3072 on the H100), 128 threads as 2×2 warps; edges zero-filled.
// pre: k % 8 == 0, n % 8 == 0, every operand 16-byte aligned: the caller checks.
// How each warp reads its mma fragments from shared memory. Scalar: 32-bit loads, four per A fragment and two per
// B fragment (four 16-bit loads a register where B is k×n). Ldmatrix: `ldmatrix.x4`, one instruction for an A
// fragment of 16×16 and one for two B fragments (`.trans` where B is k×n); needs (bn / 2) % 16 == 0.
enum class HalfGemmForm { Scalar, Ldmatrix };
struct HalfGemmKernel {
  GemmConfig tile;
  bool bf16 = true;           // else float16
  bool weight_rows = true;    // B given as W's rows (n×k); else as k×n rows
  HalfGemmForm form = HalfGemmForm::Scalar;
};
std::string half_gemm_name(const HalfGemmKernel& k);  // "kiln_gemm_bf16_wt_64x64", "kiln_gemm_bf16_kn_32x64_ldsm"
int half_gemm_stages(const GemmConfig& tile);          // 64x64: 4, 128x64: 3
// The kernels a 16-bit type's products use: tiles 64×64 and 128×64, each layout of B, scalar fragment loads (the
// form measured on the H100 against cuBLAS: bench/product_probe.cpp).
std::vector<HalfGemmKernel> half_gemm_kernels(bool bf16);
// Every kernel the probe times and the GPU tests check, the used ones among them: tiles 32×32, 32×64, 64×32, 64×64
// and 128×64 (small problems fill more multiprocessors with smaller tiles), each layout of B, each form.
std::vector<HalfGemmKernel> half_gemm_candidates(bool bf16);
// One translation unit holding each kernel's `extern "C" __global__` function, each taking one
// KilnHalfGemmArgs {a, b, c, m, n, k} by value; a 1-D grid of ceil(m/bm)·ceil(n/bn) blocks of 128 threads.
// pre: each tile's bm % 32 == 0 and bn % 16 == 0 (bn % 32 == 0 for the ldmatrix form); else kiln::Error.
std::string half_gemm_source(const std::vector<HalfGemmKernel>& kernels);

}  // namespace kiln::codegen
