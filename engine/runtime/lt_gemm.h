// A region's matrix products on the GPU through cuBLASLt directly.
//
// LibTorch's `mm` calls cublasGemmEx: its kernel choice is cuBLAS's, made on every call, and the call pays
// LibTorch's dispatch and checks (11-36 us of host per product in a default-mode call). For bfloat16 and
// float16, cuBLASLt's heuristic, asked once per problem, picks faster kernels for the same problem and the
// same arithmetic (H200, bench/gpu/probes/cublaslt_algos.cu: the bfloat16 linears of BERT and the encoder
// 1.1-1.5x faster than cublasGemmEx; in BERT bfloat16 0.157 against 0.198 ms of GEMM per call). For float32 its
// first choice was slower inside real models (BERT, GPT-2 and the encoder block 6-12 % slower per call, smaller
// tiles than cublasGemmEx's), so float32 products stay LibTorch's unless timed. A prepared product
// (direct_extern.h) calls cuBLASLt with descriptors and the algorithm kept per problem (sizes, leading
// dimensions, transposes, dtype, precision and the pointers' alignment), on LibTorch's cuBLASLt handle,
// workspace and current stream, with the precision LibTorch would use: float32 at `highest` in float32
// (CUBLAS_COMPUTE_32F), at `high`/`medium` TF32; bfloat16 and float16 accumulate in float32, with
// reduced-precision split-K reductions only where LibTorch allows them. With `tune` (max-autotune), the first
// call of each problem times the heuristic's candidates (up to 8) and LibTorch's own product, float32 included,
// and keeps the fastest whose result agrees with LibTorch's (compared on the device); LibTorch's product when it
// wins. A problem is timed once per process: later products of the same problem (a model's repeated blocks; the
// key above) take that race's outcome and its rows, their choice saying so.
//
// lt_problem(a sizes/strides, b sizes/strides)
//   pre:  a is [M, K], b is [K, N] (row-major sizes, element strides).
//   post: the column-major problem cuBLASLt solves for C[M, N] = a @ b written to a new contiguous C
//         (C^T = b^T a^T): cuBLAS's first operand is b, its second a; nullopt when a size is 0 or an
//         operand is neither row- nor column-contiguous (a leading dimension below its rows, an expanded
//         or strided dimension).
// LtGemm::mm(a, b)
//   a @ b as a new contiguous tensor, or an undefined tensor when this is not a product cuBLASLt takes here
//   (the caller then calls LibTorch): CPU tensors, mixed devices or dtypes, dtypes other than bfloat16 and
//   float16 (float32 too when tuned or `all_dtypes`), gradients required, a layout lt_problem refuses, no
//   algorithm, LibTorch's product faster (tuned), cuBLASLt not loaded.
//
// KILN_CUBLASLT=0 sends every product through LibTorch (read on each region run).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kiln::runtime {

struct LtOperand {
  bool trans = false;  // op(X) = X^T
  int64_t rows = 0, cols = 0, ld = 0;  // the column-major matrix X as stored
};

struct LtProblem {
  int64_t m = 0, n = 0, k = 0;  // cuBLAS's sizes: m = N, n = M
  LtOperand a, b;               // cuBLAS's operands: a is the product's b, b the product's a
  int64_t ldc = 0;              // = m
};

std::optional<LtProblem> lt_problem(at::IntArrayRef a_sizes, at::IntArrayRef a_strides, at::IntArrayRef b_sizes,
                                    at::IntArrayRef b_strides);

class LtGemm {
 public:
  // all_dtypes: float32 products untuned as well (tests of the float32 path).
  explicit LtGemm(bool tune = false, bool all_dtypes = false);
  ~LtGemm();
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;

  at::Tensor mm(const at::Tensor& a, const at::Tensor& b);

  // Each timed choice (tune): the problem and every contender's device ms per call, the kept one marked.
  struct Race {
    std::string problem;  // "64x4096 @ 4096x1024 float32"
    struct Row {
      std::string what;  // "LibTorch's product (cublasGemmEx)", "cuBLASLt algorithm 2 of 8", "... - rejected: ..."
      double ms = -1;    // negative: not timed (the text says why)
      bool chosen = false;
    };
    std::vector<Row> rows;
  };
  std::vector<Race> races() const;
  // What the last new problem chose ("cuBLASLt algorithm 3 of 8 (timed)", "cuBLASLt heuristic's first
  // algorithm", "LibTorch's product (...)", "..., timed for an earlier product of this problem"); empty before any.
  std::string last_choice() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Device milliseconds per call of fn on the current stream: the best of `rounds` blocks of `reps` calls, each
// block queued behind a short spin kernel so the device runs the calls back to back. The host's cost of
// issuing a call (LibTorch's dispatch against a direct launch) is then not in the figure, as it is not in a
// CUDA graph's replay, where the tuned choices run. Not during CUDA graph capture; GPU builds only (-1 else).
float queued_device_ms(const std::function<void()>& fn, int reps = 10, int rounds = 3);

// Products this process made through LtGemm::mm.
uint64_t lt_gemm_calls();

// Whether prepared products go to cuBLASLt (KILN_CUBLASLT, on unless "0").
bool lt_gemms_enabled();

}  // namespace kiln::runtime
