// A 2-d convolution handed to cuDNN's convolution call directly, without ATen's per-call path.
//
// ATen's convolution on the GPU spends its host time before cuDNN ever runs: three dispatched ops
// (convolution, _convolution, cudnn_convolution), parameter checks, backend selection, a hashed lookup of the
// cached plan and a variant pack built per call. In a default-mode call of a convolutional network (fifty or
// eighty convolutions, each a few microseconds of GPU work) that host time is the call's time. A Kiln region
// knows each convolution's arguments when it is compiled, so it sets cuDNN's descriptors up once per input
// shape and per call only allocates the output (and workspace) on LibTorch's allocator and calls cuDNN.
//
// CudnnConv::run(x, w, stride, padding, dilation, groups)
//   pre:  x is N,C,H,W and w K,C/groups,R,S, on one CUDA device.
//   returns x convolved with w (no bias), as ATen's convolution computes it: the same cuDNN convolution, the
//   math ATen would allow (TF32 only where torch.backends.cudnn.allow_tf32 allows it; tensor cores for half
//   types), the algorithm cuDNN's heuristics rank first, in ATen's memory format (row-major when input and
//   weight are; channels-last when the input is, the weight converted for the call unless stored so). An
//   undefined tensor where ATen would not call cuDNN this way: a row-major depthwise convolution (ATen's own
//   kernel), an input neither row-major nor channels-last, a dtype other than float32/float16/bfloat16, cuDNN
//   turned off, benchmark or deterministic mode on, more elements than int32 indexing, the first call inside
//   a CUDA graph's capture, or cuDNN refusing the descriptors. The caller
//   then uses ATen; a convolution refused once is not tried again (until its input shape changes).
//
// KILN_DIRECT_CUDNN=0 leaves every convolution to ATen (read on each region run).
#pragma once

#include <ATen/ATen.h>

#include <memory>
#include <string>
#include <vector>

namespace kiln::cuda {

class CudnnConv {
 public:
  CudnnConv();
  ~CudnnConv();
  CudnnConv(const CudnnConv&) = delete;
  CudnnConv& operator=(const CudnnConv&) = delete;

  at::Tensor run(const at::Tensor& x, const at::Tensor& w, const std::vector<int64_t>& stride,
                 const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation, int64_t groups);

  // Why the last call was left to ATen ("" when cuDNN ran it, or before any call).
  const std::string& refusal() const { return refusal_; }

 private:
  struct Plan;
  std::unique_ptr<Plan> plan_;
  std::string refusal_;
};

bool direct_cudnn_enabled();

// How many convolutions this process ran through CudnnConv (for tests and the benchmark).
uint64_t direct_cudnn_calls();

}  // namespace kiln::cuda
