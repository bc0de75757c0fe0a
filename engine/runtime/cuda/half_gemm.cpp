#include "engine/runtime/cuda/half_gemm.h"

#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "engine/base/error.h"
#include "engine/codegen/cuda/gemm_template.h"
#include "engine/codegen/cuda/nvrtc_compiler.h"
#include "engine/runtime/cuda/cuda_driver.h"

#if KILN_TORCH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <cuda_runtime_api.h>
#endif

namespace kiln::runtime {

namespace {

std::atomic<uint64_t> calls{0};

struct KilnHalfGemmArgs {  // the kernels' by-value argument (gemm_template.cpp)
  const void* a;
  const void* b;
  void* c;
  long long m, n, k;
};

const codegen::GemmConfig kSmall{64, 64}, kLarge{128, 64};

// The module holding `ks` (by their names), compiled once per process.
std::shared_ptr<cuda::Module> module_for(const std::vector<codegen::HalfGemmKernel>& ks) {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<cuda::Module>> loaded;
  std::vector<std::string> names;
  std::string key;
  for (const auto& k : ks) {
    names.push_back(codegen::half_gemm_name(k));
    key += names.back() + "\n";
  }
  std::lock_guard<std::mutex> lock(mu);
  auto& m = loaded[key];
  if (!m) {
#if KILN_TORCH_CUDA
    cudaFree(nullptr);  // the device's primary context current (the runtime makes it), for the driver's module load
#endif
    auto bin = codegen::compile_cuda(codegen::half_gemm_source(ks), cuda::device_arch());
    m = std::make_shared<cuda::Module>(bin.cubin, names);
  }
  return m;
}

class HalfGemms : public OwnProduct {
 public:
  // One type's four kernels (two tiles, two layouts of b); with `only`, that one kernel of the module holding every
  // candidate of its type (one compile for all of them, however many the probe or a test runs).
  HalfGemms(double max_flop, bool bf16, std::optional<codegen::HalfGemmKernel> only)
      : max_flop_(max_flop),
        bf16_(bf16),
        only_(std::move(only)),
        module_(module_for(only_ ? codegen::half_gemm_candidates(bf16) : codegen::half_gemm_kernels(bf16))) {}

  at::Tensor mm(const at::Tensor& a, const at::Tensor& b) override {
#if KILN_TORCH_CUDA
    const auto type = bf16_ ? at::kBFloat16 : at::kHalf;
    if (!a.is_cuda() || a.scalar_type() != type || b.scalar_type() != type || a.dim() != 2 || b.dim() != 2 ||
        a.device() != b.device() || !a.is_contiguous())
      return {};
    const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
    if (b.size(0) != k || m == 0 || k == 0 || n == 0 || k % 8 != 0 || n % 8 != 0) return {};
    if (max_flop_ > 0 && 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) > max_flop_)
      return {};
    bool weight_rows;
    if (b.stride(0) == 1 && b.stride(1) == k) weight_rows = true;         // w.t() of a row-major [n, k]
    else if (b.stride(1) == 1 && b.stride(0) == n) weight_rows = false;   // a row-major [k, n]
    else return {};
    if (only_ && only_->weight_rows != weight_rows) return {};
    auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
    if (!aligned(a.data_ptr()) || !aligned(b.data_ptr())) return {};
    at::Tensor c = at::empty({m, n}, a.options());
    if (!aligned(c.data_ptr())) return {};
    // The large tile only where it still gives every multiprocessor a block.
    const int sms = at::cuda::getDeviceProperties(a.device().index())->multiProcessorCount;
    const auto blocks = [&](const codegen::GemmConfig& t) { return ((m + t.bm - 1) / t.bm) * ((n + t.bn - 1) / t.bn); };
    const codegen::GemmConfig& tile = only_ ? only_->tile : blocks(kLarge) >= sms ? kLarge : kSmall;
    KilnHalfGemmArgs args{a.data_ptr(), b.data_ptr(), c.data_ptr(), m, n, k};
    const int64_t grid = blocks(tile);
    if (grid > 0x7fffffff) return {};
    auto f = module_->function(
        codegen::half_gemm_name({tile, bf16_, weight_rows, only_ ? only_->form : codegen::HalfGemmForm::Scalar}));
    cuda::launch(f, static_cast<unsigned>(grid), 128, 0,
                 static_cast<cuda::Stream>(at::cuda::getCurrentCUDAStream().stream()), &args, sizeof args);
    calls.fetch_add(1, std::memory_order_relaxed);
    return c;
#else
    (void)a;
    (void)b;
    return {};
#endif
  }

 private:
  double max_flop_;
  bool bf16_;
  std::optional<codegen::HalfGemmKernel> only_;
  std::shared_ptr<cuda::Module> module_;
};

}  // namespace

std::shared_ptr<OwnProduct> half_gemms(double max_flop, bool bf16) {
  return std::make_shared<HalfGemms>(max_flop, bf16, std::nullopt);
}

std::shared_ptr<OwnProduct> half_gemm_kernel(const codegen::HalfGemmKernel& kernel) {
  return std::make_shared<HalfGemms>(0, kernel.bf16, kernel);
}

uint64_t half_gemm_calls() { return calls.load(std::memory_order_relaxed); }

}  // namespace kiln::runtime
