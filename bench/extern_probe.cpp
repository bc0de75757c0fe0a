// Host cost of the pieces of a default-mode extern call on the GPU, one by one: each piece called ITERS times
// while the stream is held by a sleeping kernel (the calls queue behind it, so the figure is host time only,
// not the device's), median of 7 blocks, µs per call, under InferenceMode and under no-grad. Sizes: GPT-2's and
// BERT-base's bfloat16 projections and attention at batch 8 × 128; and the float32 linears without their bias
// (their readers add it) of ConvNeXt-T at batch 8 (an image's pixels, [8, 56, 56, 96] -> 384) and of BERT-base
// at 8 × 128 tokens, by each way of calling the product.
//
//   kiln_extern_probe [ITERS=200]
#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#if KILN_TORCH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/EmptyTensor.h>
#include <ATen/ops/mm_cuda_dispatch.h>
#include <ATen/ops/_scaled_dot_product_cudnn_attention.h>
#include <ATen/ops/_scaled_dot_product_cudnn_attention_cuda_dispatch.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>

#include "bench/probe_timing.h"
#include "engine/runtime/lt_gemm.h"

namespace {

using kiln::bench::host_us;

void run(const char* guard, int iters) {
  auto bf = at::TensorOptions().dtype(at::kBFloat16).device(at::kCUDA);
  at::Tensor x = at::randn({1024, 768}, bf), w = at::randn({768, 2304}, bf), bias = at::randn({2304}, bf);
  at::Tensor q = at::randn({8, 12, 128, 64}, bf), k = at::randn({8, 12, 128, 64}, bf), v = at::randn({8, 12, 128, 64}, bf);
  at::Tensor mask = at::zeros({8, 1, 1, 128}, bf);
  at::Tensor proj = at::randn({1024, 2304}, bf);
  at::Tensor small = at::empty({1}, at::TensorOptions().dtype(at::kFloat).device(at::kCUDA));
  kiln::runtime::LtGemm lt;
  auto stream = at::cuda::getCurrentCUDAStream().stream();
  const auto cudnn = c10::Dispatcher::singleton().findSchemaOrThrow("aten::_scaled_dot_product_cudnn_attention", "");
  struct Row {
    const char* what;
    std::function<void()> fn;
  };
  std::vector<Row> rows = {
      {"cudaMemsetAsync 4 bytes (a launch)", [&] { cudaMemsetAsync(small.data_ptr(), 0, 4, stream); }},
      {"empty_strided_cuda [1024,2304] bf16",
       [&] { at::detail::empty_strided_cuda({1024, 2304}, {2304, 1}, at::kBFloat16, x.device()); }},
      {"getCurrentCUDAStream", [&] { (void)at::cuda::getCurrentCUDAStream(); }},
      {"CUDAGuard", [&] { c10::cuda::CUDAGuard g(x.device()); }},
      {"getCurrentCUDABlasLtHandle", [&] { (void)at::cuda::getCurrentCUDABlasLtHandle(); }},
      {"getCUDABlasLtWorkspace + Size",
       [&] {
         (void)at::cuda::getCUDABlasLtWorkspace();
         (void)at::cuda::getCUDABlasLtWorkspaceSize();
       }},
      {"LtGemm::mm 1024x768 @ 768x2304", [&] { lt.mm(x, w); }},
      {"at::cuda::mm (kernel directly)", [&] { at::cuda::mm(x, w); }},
      {"at::mm (dispatched)", [&] { at::mm(x, w); }},
      {"at::addmm(bias, x, w)", [&] { at::addmm(bias, x, w); }},
      {"at::linear(x, w^T, bias)", [&] { at::linear(x, w.t(), bias); }},
      {"views: reshape, narrow, reshape, transpose",
       [&] { proj.reshape({8, -1, 2304}).narrow(2, 768, 768).reshape({8, 128, 12, 64}).transpose(1, 2); }},
      {"views: one as_strided",
       [&] { proj.as_strided({8, 12, 128, 64}, {128 * 2304, 64, 2304, 1}, proj.storage_offset() + 768); }},
      {"scaled_dot_product_attention", [&] { at::scaled_dot_product_attention(q, k, v, mask); }},
      {"cuDNN attention, boxed by name",
       [&] {
         torch::jit::Stack s{q, k, v, mask, false, 0.0, false, false, 0.125};
         cudnn.callBoxed(&s);
       }},
      {"cuDNN attention, at:: typed",
       [&] { at::_scaled_dot_product_cudnn_attention(q, k, v, mask, false, 0.0, false, false, 0.125); }},
      {"cuDNN attention, CUDA kernel directly",
       [&] { at::cuda::_scaled_dot_product_cudnn_attention(q, k, v, mask, false, 0.0, false, false, 0.125); }},
  };
  // float32, `highest` precision (the benchmark's): linears without their bias on 4-d and 3-d inputs.
  auto f32 = at::TensorOptions().dtype(at::kFloat).device(at::kCUDA);
  at::Tensor px = at::randn({8, 56, 56, 96}, f32), pw = at::randn({384, 96}, f32);
  at::Tensor tx = at::randn({8, 128, 768}, f32), tw = at::randn({768, 768}, f32);
  at::Tensor tout = at::empty({1024, 768}, f32);
  kiln::runtime::LtGemm lt32(false, true);
  auto f32_rows = std::vector<Row>{
      {"f32 pixels: at::linear(x 4-d, w)", [&] { at::linear(px, pw); }},
      {"f32 pixels: at::matmul(x 4-d, w^T)", [&] { at::matmul(px, pw.t()); }},
      {"f32 pixels: view, at::cuda::mm, view", [&] { at::cuda::mm(px.view({-1, 96}), pw.t()).view({8, 56, 56, 384}); }},
      {"f32 pixels: LtGemm::mm (float32 plan kept)", [&] { lt32.mm(px.view({-1, 96}), pw.t()); }},
      {"f32 tokens: at::linear(x 3-d, w)", [&] { at::linear(tx, tw); }},
      {"f32 tokens: view, at::cuda::mm, view", [&] { at::cuda::mm(tx.view({-1, 768}), tw.t()).view({8, 128, 768}); }},
      {"f32 tokens: at::cuda::mm_out (no allocation)", [&] { at::cuda::mm_out(tout, tx.view({-1, 768}), tw.t()); }},
      {"f32 tokens: getCurrentCUDABlasHandle", [&] { (void)at::cuda::getCurrentCUDABlasHandle(); }},
      {"f32 tokens: LtGemm::mm (float32 plan kept)", [&] { lt32.mm(tx.view({-1, 768}), tw.t()); }},
  };
  rows.insert(rows.end(), f32_rows.begin(), f32_rows.end());
  std::printf("\n%s: host µs per call (median of 7 blocks of %d, queued behind a sleeping kernel)\n", guard, iters);
  for (auto& r : rows) {
    try {
      std::printf("  %-48s %8.2f\n", r.what, host_us(r.fn, iters));
    } catch (const std::exception& e) {
      std::printf("  %-48s failed: %.120s\n", r.what, e.what());
    }
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int iters = argc > 1 ? std::max(1, std::atoi(argv[1])) : 200;
  if (!torch::cuda::is_available()) {
    std::fprintf(stderr, "kiln_extern_probe: no CUDA device\n");
    return 1;
  }
  {
    c10::InferenceMode im;
    run("InferenceMode", iters);
  }
  {
    at::NoGradGuard ng;
    run("no-grad", iters);
  }
  return 0;
}

#else

int main() {
  std::fprintf(stderr, "kiln_extern_probe: built without CUDA\n");
  return 1;
}

#endif
