#include "engine/runtime/cuda/gemm_tuner.h"

#include <algorithm>
#include <functional>
#include <iterator>
#include <map>

#include "engine/base/error.h"
#include "engine/codegen/cuda/gemm_template.h"
#include "engine/codegen/cuda/nvrtc_compiler.h"
#include "engine/runtime/cuda/cuda_driver.h"

#if KILN_TORCH_CUDA
#include <ATen/Context.h>
#include <ATen/cuda/CUDAContext.h>
#include <cuda_runtime_api.h>
#endif

namespace kiln::runtime {

namespace {

struct KilnGemmArgs {  // the by-value argument of every template (gemm_template.cpp)
  const float* a;
  const float* w;
  const float* bias;
  float* c;
  long long m, n, k;
};

const codegen::GemmConfig kConfigs[] = {{64, 64}, {128, 64}, {64, 128}, {128, 128}};
constexpr double kTf32Tolerance = 1e-2;  // max |template - cuBLAS| / max |cuBLAS| for a correct candidate

struct Gemm {
  size_t comp = 0;
  std::string name;
  bool tuned = false;
  int chosen = -1;  // index into kConfigs; -1: cuBLAS
  std::vector<session::AutotuneCandidate> table;
};

}  // namespace

struct GemmTuner::Impl {
  std::vector<Gemm> gemms;
  std::map<int, std::shared_ptr<cuda::Module>> modules;  // per config
};

GemmTuner::GemmTuner(std::vector<size_t> comps, std::vector<std::string> names) : impl_(std::make_unique<Impl>()) {
  for (size_t i = 0; i < comps.size(); ++i) impl_->gemms.push_back({comps[i], i < names.size() ? names[i] : "", false, -1, {}});
}

GemmTuner::~GemmTuner() = default;

std::vector<std::vector<session::AutotuneCandidate>> GemmTuner::tables() const {
  std::vector<std::vector<session::AutotuneCandidate>> out;
  for (const auto& g : impl_->gemms) out.push_back(g.table);
  return out;
}

#if KILN_TORCH_CUDA

namespace {

cuda::Function template_function(std::map<int, std::shared_ptr<cuda::Module>>& modules, int config) {
  auto it = modules.find(config);
  if (it == modules.end()) {
    const auto& cfg = kConfigs[config];
    auto bin = codegen::compile_cuda(codegen::gemm_tf32_source(cfg), cuda::device_arch());
    it = modules.emplace(config, std::make_shared<cuda::Module>(bin.cubin, std::vector<std::string>{codegen::gemm_name(cfg)}))
             .first;
  }
  return it->second->function(codegen::gemm_name(kConfigs[config]));
}

void launch_template(cuda::Function f, int config, const at::Tensor& x, const at::Tensor& w, const at::Tensor& bias,
                     at::Tensor& out, cuda::Stream stream) {
  const auto& cfg = kConfigs[config];
  KilnGemmArgs args{x.data_ptr<float>(), w.data_ptr<float>(), bias.defined() ? bias.data_ptr<float>() : nullptr,
                    out.data_ptr<float>(), x.numel() / w.size(1), w.size(0), w.size(1)};
  long long blocks = ((args.m + cfg.bm - 1) / cfg.bm) * ((args.n + cfg.bn - 1) / cfg.bn);
  cuda::launch(f, static_cast<unsigned>(blocks), 128, 0, stream, &args, sizeof args);
}

}  // namespace

bool GemmTuner::run(size_t comp, const torch::jit::Node* n, capture::Interpreter::Env& env,
                    capture::Interpreter& interp, at::Tensor& out) {
  auto g = std::find_if(impl_->gemms.begin(), impl_->gemms.end(), [&](const Gemm& x) { return x.comp == comp; });
  if (g == impl_->gemms.end()) return false;
  // Copies: a lookup may add a constant to env and move the others.
  c10::IValue xv = capture::lookup(env, n->inputs()[0]);
  c10::IValue wv = capture::lookup(env, n->inputs()[1]);
  c10::IValue bv = n->inputs().size() > 2 ? capture::lookup(env, n->inputs()[2]) : c10::IValue();
  if (!xv.isTensor() || !wv.isTensor()) return false;
  at::Tensor x = xv.toTensor(), w = wv.toTensor(), bias = bv.isTensor() ? bv.toTensor() : at::Tensor();
  bool fits = x.is_cuda() && x.scalar_type() == at::kFloat && w.scalar_type() == at::kFloat && w.dim() == 2 &&
              x.dim() >= 1 && x.size(-1) == w.size(1) && x.is_contiguous() && w.is_contiguous() &&
              (!bias.defined() || (bias.scalar_type() == at::kFloat && bias.is_contiguous() && bias.numel() == w.size(0)));
  auto stream = static_cast<cuda::Stream>(at::cuda::getCurrentCUDAStream().stream());
  if (!g->tuned) {
    cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
    cudaStreamIsCapturing(static_cast<cudaStream_t>(stream), &capturing);
    if (capturing != cudaStreamCaptureStatusNone) return false;
    g->tuned = true;
    auto time_ms = [&](const std::function<void()>& fn) {
      for (int i = 0; i < 2; ++i) fn();
      cuda::EventTimer timer(stream);
      timer.start();
      for (int i = 0; i < 10; ++i) fn();
      return timer.stop_ms() / 10;
    };
    at::Tensor ref;
    double cublas_ms = time_ms([&] { ref = interp.exec_node(n, env).at(0).toTensor(); });
    g->table.push_back({"cuBLAS (LibTorch aten::linear)", cublas_ms, false});
    double best = cublas_ms;
    size_t chosen_row = 0;  // cuBLAS unless a template beats it
    std::string why_not;
    if (!fits) why_not = "operands not contiguous float32 with a 2-D weight";
    else if (!at::globalContext().allowTF32CuBLAS()) why_not = "TF32 is off for matmul (PyTorch's default policy)";
    for (int c = 0; c < static_cast<int>(std::size(kConfigs)); ++c) {
      std::string text = codegen::gemm_config_text(kConfigs[c]);
      if (!why_not.empty()) {
        g->table.push_back({text + " - not tried: " + why_not, 0, false});
        continue;
      }
      try {
        auto f = template_function(impl_->modules, c);
        auto sizes = x.sizes().vec();
        sizes.back() = w.size(0);
        at::Tensor mine = at::empty(sizes, x.options());
        double ms = time_ms([&] { launch_template(f, c, x, w, bias, mine, stream); });
        double scale = std::max(ref.abs().max().item<double>(), 1e-30);
        double err = (mine - ref).abs().max().item<double>() / scale;
        if (!(err <= kTf32Tolerance)) {
          g->table.push_back({text + " - rejected: differs from cuBLAS by " + std::to_string(err), ms, false});
          continue;
        }
        g->table.push_back({text, ms, false});
        if (ms < best) {
          best = ms;
          g->chosen = c;
          chosen_row = g->table.size() - 1;
        }
      } catch (const Error& e) {
        g->table.push_back({text + " - failed: " + e.what(), 0, false});
      }
    }
    g->table[chosen_row].chosen = true;
  }
  if (g->chosen < 0 || !fits) return false;
  auto sizes = x.sizes().vec();
  sizes.back() = w.size(0);
  out = at::empty(sizes, x.options());
  launch_template(template_function(impl_->modules, g->chosen), g->chosen, x, w, bias, out, stream);
  return true;
}

#else

bool GemmTuner::run(size_t, const torch::jit::Node*, capture::Interpreter::Env&, capture::Interpreter&, at::Tensor&) {
  return false;
}

#endif

}  // namespace kiln::runtime
