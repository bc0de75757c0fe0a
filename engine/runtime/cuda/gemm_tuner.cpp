#include "engine/runtime/cuda/gemm_tuner.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <iterator>
#include <map>

#include "engine/base/error.h"
#include "engine/codegen/cuda/gemm_template.h"
#include "engine/codegen/cuda/nvrtc_compiler.h"
#include "engine/runtime/compare_values.h"
#include "engine/runtime/cuda/cuda_driver.h"
#include "engine/runtime/lt_gemm.h"
#include "engine/runtime/tuning_progress.h"

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
constexpr int kMatmulThenBias = -2;
constexpr int kLtThenBias = -3;

std::atomic<int> forced_tile{-1};

struct Gemm {
  GemmSite site;
  bool tuned = false;
  int chosen = -1;  // index into kConfigs; -1: cuBLAS (LibTorch's linear); kMatmulThenBias: mm, then the bias;
                    // kLtThenBias: cuBLASLt's timed algorithm, then the bias
  bool fused = false;  // the chosen template runs the tail kernel as its epilogue
  std::vector<records::AutotuneCandidate> table;
  std::shared_ptr<LtGemm> lt = std::make_shared<LtGemm>(true);
};

}  // namespace

struct GemmTuner::Impl {
  std::vector<Gemm> gemms;
  KernelArgsShape args;
  std::map<std::string, std::shared_ptr<cuda::Module>> modules;  // per function name
};

void force_gemm_tile_for_testing(int config) { forced_tile = config; }

GemmTuner::GemmTuner(std::vector<GemmSite> sites, KernelArgsShape args) : impl_(std::make_unique<Impl>()) {
  for (auto& s : sites) impl_->gemms.push_back({std::move(s), false, -1, false, {}, std::make_shared<LtGemm>(true)});
  impl_->args = args;
}

GemmTuner::~GemmTuner() = default;

std::vector<std::vector<records::AutotuneCandidate>> GemmTuner::tables() const {
  std::vector<std::vector<records::AutotuneCandidate>> out;
  for (const auto& g : impl_->gemms) out.push_back(g.table);
  return out;
}

#if KILN_TORCH_CUDA

namespace {

// linear(x, w, bias) as cuBLAS's plain matrix product and then the bias added by its own kernel:
// LibTorch's linear hands the bias to cuBLASLt as a GEMM epilogue, and for some float32 shapes
// cuBLAS then picks a smaller tile than for the plain product (seen on the H100: ViT-B/16's MLP
// GEMMs 64x64 tiles against 128x128). The race decides per shape.
at::Tensor matmul_then_bias(const at::Tensor& x, const at::Tensor& w, const at::Tensor& bias) {
  auto sizes = x.sizes().vec();
  sizes.back() = w.size(0);
  at::Tensor y = at::mm(x.reshape({-1, x.size(-1)}), w.t());
  y.add_(bias);
  return y.view(sizes);
}

// linear(x, w, bias) as cuBLASLt's product, its algorithm chosen by timing on the first call of each problem
// (lt_gemm.h), then the bias; undefined when cuBLASLt does not take the product.
at::Tensor lt_then_bias(LtGemm& lt, const at::Tensor& x, const at::Tensor& w, const at::Tensor& bias) {
  auto sizes = x.sizes().vec();
  sizes.back() = w.size(0);
  at::Tensor y = lt.mm(x.reshape({-1, x.size(-1)}), w.t());
  if (!y.defined()) return y;
  if (bias.defined()) y.add_(bias);
  return y.view(sizes);
}

// The template of tile `config`, with `epi` fused when given; compiled once per region.
cuda::Function template_function(std::map<std::string, std::shared_ptr<cuda::Module>>& modules, int config,
                                 const codegen::GemmEpilogue* epi) {
  const auto& cfg = kConfigs[config];
  const std::string name = codegen::gemm_name(cfg, epi);
  auto it = modules.find(name);
  if (it == modules.end()) {
    auto bin = codegen::compile_cuda(codegen::gemm_tf32_source(cfg, epi), cuda::device_arch());
    it = modules.emplace(name, std::make_shared<cuda::Module>(bin.cubin, std::vector<std::string>{name})).first;
  }
  return it->second->function(name);
}

// Launches the template; with an epilogue the argument block also carries the region's KilnArgs
// (its buffers, scalars and size symbols, laid out as the generated kernels read them).
void launch_template(cuda::Function f, int config, const at::Tensor& x, const at::Tensor& w, const at::Tensor& bias,
                     at::Tensor& out, cuda::Stream stream, const KernelArgsShape* shape = nullptr,
                     const LoweredRegionFn::ExternContext* cx = nullptr) {
  const auto& cfg = kConfigs[config];
  KilnGemmArgs args{x.data_ptr<float>(), w.data_ptr<float>(), bias.defined() ? bias.data_ptr<float>() : nullptr,
                    out.data_ptr<float>(), x.numel() / w.size(1), w.size(0), w.size(1)};
  long long blocks = ((args.m + cfg.bm - 1) / cfg.bm) * ((args.n + cfg.bn - 1) / cfg.bn);
  if (!shape || !cx) {
    cuda::launch(f, static_cast<unsigned>(blocks), 128, 0, stream, &args, sizeof args);
    return;
  }
  static_assert(sizeof(KilnGemmArgs) % 8 == 0, "KilnArgs follows at an 8-byte boundary");
  std::vector<char> block(sizeof args + shape->bytes(), 0);
  std::memcpy(block.data(), &args, sizeof args);
  shape->pack(block.data() + sizeof args, cx->ptrs, cx->scalars, cx->syms);
  cuda::launch(f, static_cast<unsigned>(blocks), 128, 0, stream, block.data(), block.size());
}

}  // namespace

void GemmTuner::precompile() {
  // The TF32 templates are candidates only while LibTorch allows TF32 for matmul (run() says "not tried"
  // otherwise); should the policy change before the first call, run() compiles the tiles it races then.
  if (!at::globalContext().allowTF32CuBLAS()) return;
  std::vector<std::string> names, sources;
  for (const auto& g : impl_->gemms)
    for (const auto& cfg : kConfigs) {
      const codegen::GemmEpilogue* epi = g.site.epilogue ? &*g.site.epilogue : nullptr;
      std::string name = codegen::gemm_name(cfg, epi);
      if (impl_->modules.count(name) || std::find(names.begin(), names.end(), name) != names.end()) continue;
      names.push_back(name);
      sources.push_back(codegen::gemm_tf32_source(cfg, epi));
    }
  if (sources.empty()) return;
  auto bins = codegen::compile_cuda_units(sources, cuda::device_arch());
  for (size_t i = 0; i < names.size(); ++i)
    impl_->modules.emplace(names[i],
                           std::make_shared<cuda::Module>(bins.units[i].cubin, std::vector<std::string>{names[i]}));
}

bool GemmTuner::run(size_t comp, const torch::jit::Node* n, capture::Interpreter::Env& env,
                    capture::Interpreter& interp, at::Tensor& out, LoweredRegionFn::ExternContext& cx) {
  auto g = std::find_if(impl_->gemms.begin(), impl_->gemms.end(), [&](const Gemm& x) { return x.site.comp == comp; });
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
  // The tail kernel can be fused when it is the very next step and its buffers are there.
  const codegen::GemmEpilogue* epi = g->site.epilogue && cx.next_kernel == g->site.tail_kernel && cx.launch_next && cx.bufs
                                         ? &*g->site.epilogue
                                         : nullptr;
  auto stream = static_cast<cuda::Stream>(at::cuda::getCurrentCUDAStream().stream());
  auto result_sizes = [&] {
    auto sizes = x.sizes().vec();
    sizes.back() = w.size(0);
    return sizes;
  };
  if (!g->tuned) {
    cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
    cudaStreamIsCapturing(static_cast<cudaStream_t>(stream), &capturing);
    if (capturing != cudaStreamCaptureStatusNone) return false;
    g->tuned = true;
    // Device time (lt_gemm.h): LibTorch's linear pays its dispatch on the host, which a CUDA graph's replay,
    // where the choice runs, does not.
    auto time_ms = [&](const std::function<void()>& fn) { return queued_device_ms(fn, 10, 3); };
    // The GEMM's output into its buffer and the tail kernel after it, where the tail is fused into the templates.
    auto then_tail = [&](const at::Tensor& y) {
      if (!epi) return;
      (*cx.bufs)[comp] = y.contiguous();
      cx.ptrs[comp] = (*cx.bufs)[comp].data_ptr();
      cx.launch_next();
    };
    at::Tensor ref;
    const std::string tail = epi ? " + " + epi->kernel : "";
    const std::string what = "gemm_" + g->site.name;
    const int total = 1 + static_cast<int>(std::size(kConfigs));
    report_tuning(what, 0, total);
    double cublas_ms = time_ms([&] {
      ref = interp.exec_node(n, env).at(0).toTensor();
      then_tail(ref);
    });
    std::vector<at::Tensor> ref_tail;
    if (epi)
      for (int c : g->site.tail_comps) ref_tail.push_back((*cx.bufs)[c].clone());
    g->table.push_back({"cuBLAS (LibTorch aten::linear)" + tail, cublas_ms, false});
    double best = cublas_ms;
    size_t chosen_row = 0;  // cuBLAS unless a template beats it
    // A candidate computing the linear's result by other calls: timed with the tail kernel after it (as
    // cuBLAS's linear was), checked against LibTorch's linear, its row added, chosen when faster.
    auto other_calls = [&](const std::string& text, int id, const std::function<at::Tensor()>& produce) {
      at::Tensor mine;
      const double ms = time_ms([&] {
        mine = produce();
        then_tail(mine);
      });
      auto diff = compare_to_eager(mine, ref, at::globalContext().allowTF32CuBLAS());
      if (!diff.ok) {
        g->table.push_back({text + " - rejected: differs from LibTorch's linear by " + std::to_string(diff.max_rel), ms,
                            false});
        return;
      }
      g->table.push_back({text, ms, false});
      if (forced_tile < 0 && ms < best) {
        best = ms;
        g->chosen = id;
        chosen_row = g->table.size() - 1;
      }
    };
    const bool same_types = x.is_cuda() && w.dim() == 2 && x.dim() >= 1 && x.size(-1) == w.size(1) &&
                            x.scalar_type() == w.scalar_type();
    const bool bias_fits = bias.defined() && bias.scalar_type() == w.scalar_type() && bias.dim() == 1 &&
                           bias.numel() == w.size(0);
    // cuBLAS's plain product, then the bias: same math, the product's own choice of kernel.
    if (same_types && bias_fits) {
      try {
        other_calls("cuBLAS matrix product, then the bias (no GEMM epilogue)" + tail, kMatmulThenBias,
                    [&] { return matmul_then_bias(x, w, bias); });
      } catch (const std::exception& e) {
        g->table.push_back({std::string("cuBLAS matrix product, then the bias - failed: ") + e.what(), 0, false});
      }
    }
    // cuBLASLt called directly, the fastest of its heuristic's candidates, then the bias.
    if (!lt_gemms_enabled()) {
      g->table.push_back({"cuBLASLt matrix product - not tried: KILN_CUBLASLT=0", 0, false});
    } else if (same_types && (!bias.defined() || bias_fits)) {
      try {
        at::Tensor first = lt_then_bias(*g->lt, x, w, bias);  // the first call times cuBLASLt's candidates
        if (!first.defined())
          g->table.push_back({"cuBLASLt matrix product - not taken: " + g->lt->last_choice(), 0, false});
        else
          other_calls("cuBLASLt matrix product (" + g->lt->last_choice() + ")" + (bias.defined() ? ", then the bias" : "") +
                          tail,
                      kLtThenBias, [&] { return lt_then_bias(*g->lt, x, w, bias); });
      } catch (const std::exception& e) {
        g->table.push_back({std::string("cuBLASLt matrix product - failed: ") + e.what(), 0, false});
      }
    }
    std::string why_not;
    if (!fits) why_not = "operands not contiguous float32 with a 2-D weight";
    else if (!at::globalContext().allowTF32CuBLAS()) why_not = "TF32 is off for matmul (PyTorch's default policy)";
    for (int c = 0; c < static_cast<int>(std::size(kConfigs)); ++c) {
      report_tuning(what, 1 + c, total);
      std::string text = codegen::gemm_config_text(kConfigs[c]) + (epi ? ", " + epi->kernel + " fused" : "");
      if (!why_not.empty()) {
        g->table.push_back({text + " - not tried: " + why_not, 0, false});
        continue;
      }
      try {
        auto f = template_function(impl_->modules, c, epi);
        at::Tensor mine = at::empty(result_sizes(), x.options());
        double ms = time_ms([&] { launch_template(f, c, x, w, bias, mine, stream, &impl_->args, &cx); });
        // The one error measure (compare_values.h): max |a - b| over the largest |cuBLAS|.
        double err = compare_tensors("gemm", mine, ref, 0, 0).max_rel;
        for (size_t t = 0; t < ref_tail.size(); ++t) {  // the fused tail against the kernel's own output
          const auto& got = (*cx.bufs)[g->site.tail_comps[t]];
          err = std::max(err, compare_tensors("tail", got, ref_tail[t], 0, 0).max_rel);
        }
        if (!(err <= kTf32Tolerance)) {
          g->table.push_back({text + " - rejected: differs from cuBLAS by " + std::to_string(err), ms, false});
          continue;
        }
        g->table.push_back({text, ms, false});
        const int forced = forced_tile;
        if (forced >= 0 ? c == forced : ms < best) {
          best = ms;
          g->chosen = c;
          g->fused = epi != nullptr;
          chosen_row = g->table.size() - 1;
        }
      } catch (const Error& e) {
        g->table.push_back({text + " - failed: " + e.what(), 0, false});
      }
    }
    g->table[chosen_row].chosen = true;
    report_tuning(what, total, total);
  }
  if (g->chosen == kMatmulThenBias) {
    if (!bias.defined()) return false;
    out = matmul_then_bias(x, w, bias);
    return true;
  }
  if (g->chosen == kLtThenBias) {
    out = lt_then_bias(*g->lt, x, w, bias);
    return out.defined();
  }
  if (g->chosen < 0 || !fits) return false;
  const codegen::GemmEpilogue* use = g->fused ? epi : nullptr;
  if (g->fused && !epi) return false;  // tuned with the tail fused; without it, LibTorch's op runs
  out = at::empty(result_sizes(), x.options());
  launch_template(template_function(impl_->modules, g->chosen, use), g->chosen, x, w, bias, out, stream, &impl_->args,
                  use ? &cx : nullptr);
  if (use) cx.next_kernel_done = true;
  return true;
}

#else

void GemmTuner::precompile() {}

bool GemmTuner::run(size_t, const torch::jit::Node*, capture::Interpreter::Env&, capture::Interpreter&, at::Tensor&,
                    LoweredRegionFn::ExternContext&) {
  return false;
}

#endif

}  // namespace kiln::runtime
