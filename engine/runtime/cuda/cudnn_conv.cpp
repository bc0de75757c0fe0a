#include "engine/runtime/cuda/cudnn_conv.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

#if KILN_TORCH_CUDA && __has_include(<cudnn.h>)
#define KILN_DIRECT_CUDNN 1
#include <ATen/Context.h>
#include <c10/cuda/CUDAGraphsC10Utils.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cudnn.h>
#include <dlfcn.h>

#include <climits>
#include <mutex>
#else
#define KILN_DIRECT_CUDNN 0
#endif

namespace kiln::cuda {

namespace {
std::atomic<uint64_t> g_calls{0};
}

bool direct_cudnn_enabled() {
  const char* v = std::getenv("KILN_DIRECT_CUDNN");
  return !(v && std::strcmp(v, "0") == 0);
}

uint64_t direct_cudnn_calls() { return g_calls.load(std::memory_order_relaxed); }

#if KILN_DIRECT_CUDNN

namespace {

// cuDNN's entry points, bound from the library LibTorch already loaded (the same cuDNN ATen calls).
struct Lib {
  std::string error;
  cudnnStatus_t (*create)(cudnnHandle_t*) = nullptr;
  cudnnStatus_t (*set_stream)(cudnnHandle_t, cudaStream_t) = nullptr;
  const char* (*error_string)(cudnnStatus_t) = nullptr;
  cudnnStatus_t (*create_tensor)(cudnnTensorDescriptor_t*) = nullptr;
  cudnnStatus_t (*set_tensor)(cudnnTensorDescriptor_t, cudnnTensorFormat_t, cudnnDataType_t, int, int, int, int) = nullptr;
  cudnnStatus_t (*destroy_tensor)(cudnnTensorDescriptor_t) = nullptr;
  cudnnStatus_t (*create_filter)(cudnnFilterDescriptor_t*) = nullptr;
  cudnnStatus_t (*set_filter)(cudnnFilterDescriptor_t, cudnnDataType_t, cudnnTensorFormat_t, int, int, int, int) = nullptr;
  cudnnStatus_t (*destroy_filter)(cudnnFilterDescriptor_t) = nullptr;
  cudnnStatus_t (*create_conv)(cudnnConvolutionDescriptor_t*) = nullptr;
  cudnnStatus_t (*set_conv)(cudnnConvolutionDescriptor_t, int, int, int, int, int, int, cudnnConvolutionMode_t,
                            cudnnDataType_t) = nullptr;
  cudnnStatus_t (*set_groups)(cudnnConvolutionDescriptor_t, int) = nullptr;
  cudnnStatus_t (*set_math)(cudnnConvolutionDescriptor_t, cudnnMathType_t) = nullptr;
  cudnnStatus_t (*destroy_conv)(cudnnConvolutionDescriptor_t) = nullptr;
  cudnnStatus_t (*output_dim)(cudnnConvolutionDescriptor_t, cudnnTensorDescriptor_t, cudnnFilterDescriptor_t, int*, int*,
                              int*, int*) = nullptr;
  cudnnStatus_t (*algorithms)(cudnnHandle_t, cudnnTensorDescriptor_t, cudnnFilterDescriptor_t,
                              cudnnConvolutionDescriptor_t, cudnnTensorDescriptor_t, int, int*,
                              cudnnConvolutionFwdAlgoPerf_t*) = nullptr;
  cudnnStatus_t (*workspace)(cudnnHandle_t, cudnnTensorDescriptor_t, cudnnFilterDescriptor_t,
                             cudnnConvolutionDescriptor_t, cudnnTensorDescriptor_t, cudnnConvolutionFwdAlgo_t,
                             size_t*) = nullptr;
  cudnnStatus_t (*forward)(cudnnHandle_t, const void*, cudnnTensorDescriptor_t, const void*, cudnnFilterDescriptor_t,
                           const void*, cudnnConvolutionDescriptor_t, cudnnConvolutionFwdAlgo_t, void*, size_t,
                           const void*, cudnnTensorDescriptor_t, void*) = nullptr;
};

template <typename T>
bool bind_symbol(Lib& l, const std::vector<void*>& libs, T& fn, const char* name) {
  for (void* h : libs)
    if (void* p = ::dlsym(h, name)) {
      fn = reinterpret_cast<T>(p);
      return true;
    }
  l.error = std::string("cuDNN lacks ") + name;
  return false;
}

const Lib& lib() {
  static Lib l;
  static std::once_flag once;
  std::call_once(once, [] {
    std::vector<void*> libs;
    for (const char* name : {"libcudnn.so.9", "libcudnn_cnn.so.9"}) {
      void* h = ::dlopen(name, RTLD_NOW | RTLD_NOLOAD);  // LibTorch's own copy, when it is loaded
      if (!h) h = ::dlopen(name, RTLD_NOW | RTLD_GLOBAL);
      if (h) libs.push_back(h);
    }
    if (libs.empty()) {
      l.error = "no cuDNN library (libcudnn.so.9)";
      return;
    }
    bool ok = bind_symbol(l, libs, l.create, "cudnnCreate") && bind_symbol(l, libs, l.set_stream, "cudnnSetStream") &&
              bind_symbol(l, libs, l.error_string, "cudnnGetErrorString") &&
              bind_symbol(l, libs, l.create_tensor, "cudnnCreateTensorDescriptor") &&
              bind_symbol(l, libs, l.set_tensor, "cudnnSetTensor4dDescriptor") &&
              bind_symbol(l, libs, l.destroy_tensor, "cudnnDestroyTensorDescriptor") &&
              bind_symbol(l, libs, l.create_filter, "cudnnCreateFilterDescriptor") &&
              bind_symbol(l, libs, l.set_filter, "cudnnSetFilter4dDescriptor") &&
              bind_symbol(l, libs, l.destroy_filter, "cudnnDestroyFilterDescriptor") &&
              bind_symbol(l, libs, l.create_conv, "cudnnCreateConvolutionDescriptor") &&
              bind_symbol(l, libs, l.set_conv, "cudnnSetConvolution2dDescriptor") &&
              bind_symbol(l, libs, l.set_groups, "cudnnSetConvolutionGroupCount") &&
              bind_symbol(l, libs, l.set_math, "cudnnSetConvolutionMathType") &&
              bind_symbol(l, libs, l.destroy_conv, "cudnnDestroyConvolutionDescriptor") &&
              bind_symbol(l, libs, l.output_dim, "cudnnGetConvolution2dForwardOutputDim") &&
              bind_symbol(l, libs, l.algorithms, "cudnnGetConvolutionForwardAlgorithm_v7") &&
              bind_symbol(l, libs, l.workspace, "cudnnGetConvolutionForwardWorkspaceSize") &&
              bind_symbol(l, libs, l.forward, "cudnnConvolutionForward");
    if (ok) l.error.clear();
  });
  return l;
}

// One handle per device on each thread (a handle is not to be shared between threads); kept for the
// thread's life, as LibTorch keeps its own. Never made while a CUDA graph is being captured (making one may
// touch the device): nullptr then.
cudnnHandle_t handle(int device) {
  thread_local std::vector<cudnnHandle_t> handles;
  if (handles.size() <= static_cast<size_t>(device)) handles.resize(static_cast<size_t>(device) + 1, nullptr);
  auto& h = handles[static_cast<size_t>(device)];
  if (!h && c10::cuda::currentStreamCaptureStatusMayInitCtx() == c10::cuda::CaptureStatus::None &&
      lib().create(&h) != CUDNN_STATUS_SUCCESS)
    h = nullptr;
  return h;
}

}  // namespace

struct CudnnConv::Plan {
  // What the descriptors were made for.
  std::vector<int64_t> x_sizes, w_sizes, stride, padding, dilation;
  int64_t groups = 1;
  at::ScalarType dtype = at::kFloat;
  int device = -1;
  bool tf32 = false;
  bool nhwc = false;  // channels-last input, weight and output (else all row-major)
  // Set up, or refused with a reason.
  std::string refused;
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  size_t workspace = 0;
  std::vector<int64_t> y_sizes;

  ~Plan() {
    const Lib& l = lib();
    if (!l.error.empty()) return;
    if (x) l.destroy_tensor(x);
    if (y) l.destroy_tensor(y);
    if (w) l.destroy_filter(w);
    if (conv) l.destroy_conv(conv);
  }

  bool matches(const at::Tensor& xt, const at::Tensor& wt, const std::vector<int64_t>& s, const std::vector<int64_t>& p,
               const std::vector<int64_t>& d, int64_t g, bool allow_tf32, bool channels_last) const {
    return xt.sizes() == at::IntArrayRef(x_sizes) && wt.sizes() == at::IntArrayRef(w_sizes) &&
           xt.scalar_type() == dtype && xt.get_device() == device && g == groups && s == stride && p == padding &&
           d == dilation && allow_tf32 == tf32 && channels_last == nhwc;
  }

  // Descriptors and the algorithm cuDNN's heuristics rank first; `refused` says why not.
  void set_up(const Lib& l, cudnnHandle_t h) {
    auto ok = [&](cudnnStatus_t st, const char* what) {
      if (st != CUDNN_STATUS_SUCCESS && refused.empty()) refused = std::string(what) + ": " + l.error_string(st);
      return st == CUDNN_STATUS_SUCCESS;
    };
    const cudnnDataType_t type = dtype == at::kHalf       ? CUDNN_DATA_HALF
                                 : dtype == at::kBFloat16 ? CUDNN_DATA_BFLOAT16
                                                          : CUDNN_DATA_FLOAT;
    auto i = [](int64_t v) { return static_cast<int>(v); };
    const cudnnTensorFormat_t format = nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
    if (!ok(l.create_tensor(&x), "cudnnCreateTensorDescriptor") || !ok(l.create_tensor(&y), "cudnnCreateTensorDescriptor") ||
        !ok(l.create_filter(&w), "cudnnCreateFilterDescriptor") ||
        !ok(l.create_conv(&conv), "cudnnCreateConvolutionDescriptor"))
      return;
    if (!ok(l.set_tensor(x, format, type, i(x_sizes[0]), i(x_sizes[1]), i(x_sizes[2]), i(x_sizes[3])),
            "input descriptor") ||
        !ok(l.set_filter(w, type, format, i(w_sizes[0]), i(w_sizes[1]), i(w_sizes[2]), i(w_sizes[3])),
            "weight descriptor") ||
        // Accumulated in float32 for every input type, as ATen sets it.
        !ok(l.set_conv(conv, i(padding[0]), i(padding[1]), i(stride[0]), i(stride[1]), i(dilation[0]), i(dilation[1]),
                       CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
            "convolution descriptor") ||
        !ok(l.set_groups(conv, i(groups)), "group count"))
      return;
    // The math ATen's descriptor allows: tensor cores for half types; for float32, TF32 only when allowed.
    const cudnnMathType_t math = type != CUDNN_DATA_FLOAT ? CUDNN_TENSOR_OP_MATH : tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
    if (!ok(l.set_math(conv, math), "math type")) return;
    int n = 0, c = 0, hh = 0, ww = 0;
    if (!ok(l.output_dim(conv, x, w, &n, &c, &hh, &ww), "output size")) return;
    y_sizes = {n, c, hh, ww};
    if (!ok(l.set_tensor(y, format, type, n, c, hh, ww), "output descriptor")) return;
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int found = 0;
    if (!ok(l.algorithms(h, x, w, conv, y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &found, perf), "algorithm heuristics"))
      return;
    for (int k = 0; k < found; ++k) {
      if (perf[k].status != CUDNN_STATUS_SUCCESS) continue;
      // A float32 convolution without TF32 stays on FMA math whatever the heuristics' entry says.
      const cudnnMathType_t chosen = type == CUDNN_DATA_FLOAT && !tf32 ? CUDNN_FMA_MATH : perf[k].mathType;
      if (type == CUDNN_DATA_FLOAT && !tf32 && perf[k].mathType == CUDNN_TENSOR_OP_MATH) continue;
      if (!ok(l.set_math(conv, chosen), "math type")) return;
      size_t bytes = 0;
      if (l.workspace(h, x, w, conv, y, perf[k].algo, &bytes) != CUDNN_STATUS_SUCCESS) continue;
      algo = perf[k].algo;
      workspace = bytes;
      return;
    }
    refused = "cuDNN's heuristics offered no usable algorithm";
  }
};

CudnnConv::CudnnConv() = default;
CudnnConv::~CudnnConv() = default;

at::Tensor CudnnConv::run(const at::Tensor& x, const at::Tensor& w, const std::vector<int64_t>& stride,
                          const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation, int64_t groups) {
  auto& ctx = at::globalContext();
  const bool tf32 = ctx.allowTF32CuDNN();
  auto refuse = [&](const char* why) {
    refusal_ = why;
    return at::Tensor();
  };
  // ATen's memory format for the call: row-major when both are, else channels-last (the weight converted
  // for the call when it is not stored so).
  const bool row_major = x.is_contiguous() && w.is_contiguous();
  const bool channels_last = !row_major && x.is_contiguous(at::MemoryFormat::ChannelsLast);
  if (plan_ && plan_->matches(x, w, stride, padding, dilation, groups, tf32, channels_last)) {
    if (!plan_->refused.empty()) return refuse("refused before for this shape");
  } else {
    // The cases where ATen would not make this very cuDNN call.
    if (!x.is_cuda() || !w.is_cuda() || x.get_device() != w.get_device()) return refuse("not on one CUDA device");
    if (x.dim() != 4 || w.dim() != 4 || stride.size() != 2 || padding.size() != 2 || dilation.size() != 2)
      return refuse("not a 4-d convolution with two-element arguments");
    const auto st = x.scalar_type();
    if (w.scalar_type() != st || (st != at::kFloat && st != at::kHalf && st != at::kBFloat16))
      return refuse("dtype other than float32, float16 or bfloat16");
    if (!row_major && !channels_last) return refuse("input neither row-major nor channels-last");
    if (!ctx.userEnabledCuDNN() || ctx.benchmarkCuDNN() || ctx.deterministicCuDNN() || ctx.deterministicAlgorithms())
      return refuse("cuDNN off, or benchmark or deterministic mode on");
    if (groups < 1 || x.size(1) != w.size(1) * groups || w.size(0) % groups != 0)
      return refuse("channels do not match the groups");
    if (groups > 1 && groups == x.size(1) && !channels_last) return refuse("row-major depthwise (ATen's own kernel)");
    if (x.numel() == 0 || w.numel() == 0 || x.numel() > INT_MAX || w.numel() > INT_MAX)
      return refuse("empty, or more elements than 32-bit indexing");
    for (size_t i = 0; i < 2; ++i)
      if (stride[i] < 1 || padding[i] < 0 || dilation[i] < 1 || stride[i] > INT_MAX || padding[i] > INT_MAX ||
          dilation[i] > INT_MAX)
        return refuse("stride, padding or dilation out of range");
    const Lib& l = lib();
    if (!l.error.empty()) return refuse("cuDNN not loaded");
    c10::cuda::CUDAGuard guard(x.device());
    // Set up outside a CUDA graph's capture only (the region's first call, which is never captured).
    if (c10::cuda::currentStreamCaptureStatusMayInitCtx() != c10::cuda::CaptureStatus::None)
      return refuse("first seen while a CUDA graph is captured");
    cudnnHandle_t h = handle(x.get_device());
    if (!h) return refuse("no cuDNN handle");
    auto plan = std::make_unique<Plan>();
    plan->x_sizes = x.sizes().vec();
    plan->w_sizes = w.sizes().vec();
    plan->stride = stride;
    plan->padding = padding;
    plan->dilation = dilation;
    plan->groups = groups;
    plan->dtype = st;
    plan->device = x.get_device();
    plan->tf32 = tf32;
    plan->nhwc = channels_last;
    plan->set_up(l, h);
    plan_ = std::move(plan);
    if (!plan_->refused.empty()) return refuse("cuDNN refused the descriptors");
  }
  const Lib& l = lib();
  const Plan& p = *plan_;
  cudnnHandle_t h = handle(p.device);
  const auto stream = c10::cuda::getCurrentCUDAStream(p.device);
  if (!h || l.set_stream(h, stream.stream()) != CUDNN_STATUS_SUCCESS) return refuse("cuDNN handle or stream");
  const at::Tensor wc = p.nhwc ? w.contiguous(at::MemoryFormat::ChannelsLast) : w;
  at::Tensor y = at::empty(p.y_sizes, x.options().memory_format(p.nhwc ? at::MemoryFormat::ChannelsLast
                                                                        : at::MemoryFormat::Contiguous));
  at::Tensor ws;
  if (p.workspace > 0) ws = at::empty({static_cast<int64_t>(p.workspace)}, x.options().dtype(at::kByte));
  const float one = 1.0f, zero = 0.0f;
  const cudnnStatus_t st = l.forward(h, &one, p.x, x.data_ptr(), p.w, wc.data_ptr(), p.conv, p.algo,
                                     ws.defined() ? ws.data_ptr() : nullptr, p.workspace, &zero, p.y, y.data_ptr());
  if (st != CUDNN_STATUS_SUCCESS) {
    plan_->refused = std::string("cudnnConvolutionForward: ") + l.error_string(st);
    return refuse("cudnnConvolutionForward failed");
  }
  refusal_.clear();
  g_calls.fetch_add(1, std::memory_order_relaxed);
  return y;
}

#else

struct CudnnConv::Plan {};
CudnnConv::CudnnConv() = default;
CudnnConv::~CudnnConv() = default;

at::Tensor CudnnConv::run(const at::Tensor&, const at::Tensor&, const std::vector<int64_t>&,
                          const std::vector<int64_t>&, const std::vector<int64_t>&, int64_t) {
  refusal_ = "this build calls cuDNN only through LibTorch";
  return at::Tensor();
}

#endif

}  // namespace kiln::cuda
