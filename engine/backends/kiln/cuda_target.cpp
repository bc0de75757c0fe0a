#include "engine/backends/kiln/cuda_target.h"
#include "kiln_build_config.h"

#if KILN_WITH_CUDA
#include <ATen/Context.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <future>
#include <map>
#include <set>
#include <sstream>

#include "engine/codegen/cuda/cubin_info.h"
#include "engine/codegen/cuda/gemm_epilogue.h"
#include "engine/lowering/channels_last.h"
#include "engine/codegen/cuda/gemm_template.h"
#include "engine/codegen/cuda/kernel_units.h"
#include "engine/codegen/cuda/nvrtc_compiler.h"
#include "engine/runtime/conv_warmup.h"
#include "engine/runtime/cuda/cuda_driver.h"
#include "engine/runtime/cuda/cuda_graph_fn.h"
#include "engine/runtime/cuda/gemm_tuner.h"
#include "engine/runtime/cuda/half_gemm.h"
#include "engine/runtime/cuda/gpu_kernels.h"

namespace kiln::backends {

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

// Forwards to the region's callable and reports the autotuning tables of its kernels.
class AutotuneReport : public runtime::CompiledFn {
 public:
  using Products = std::vector<std::pair<size_t, std::shared_ptr<runtime::LtGemm>>>;
  AutotuneReport(std::unique_ptr<runtime::CompiledFn> inner, std::shared_ptr<runtime::GpuKernelSet> set,
                 std::shared_ptr<runtime::GemmTuner> gemms = nullptr, Products products = {})
      : inner_(std::move(inner)), set_(std::move(set)), gemms_(std::move(gemms)), products_(std::move(products)) {}
  void run(capture::Interpreter& interp, capture::Interpreter::Env& env) override { inner_->run(interp, env); }
  std::vector<std::string> take_log() override { return inner_->take_log(); }
  bool record_graphs_again() override { return inner_->record_graphs_again(); }
  // Generated kernels first, then the GEMMs, then the timed products: the order of the region's kernel records.
  std::vector<std::vector<records::AutotuneCandidate>> autotune() const override {
    auto out = set_->candidates;
    if (gemms_)
      for (auto& t : gemms_->tables()) out.push_back(std::move(t));
    for (const auto& [comp, lt] : products_) {
      std::vector<records::AutotuneCandidate> table;
      for (const auto& race : lt->races())
        for (const auto& row : race.rows) table.push_back({race.problem + ": " + row.what, row.ms, row.chosen});
      if (table.empty())  // its operands never made a problem cuBLASLt takes (an input that is not contiguous)
        table.push_back({"LibTorch's product (not timed: no operands cuBLASLt takes reached it)", -1, true});
      out.push_back(std::move(table));
    }
    return out;
  }

 private:
  std::unique_ptr<runtime::CompiledFn> inner_;
  std::shared_ptr<runtime::GpuKernelSet> set_;
  std::shared_ptr<runtime::GemmTuner> gemms_;
  Products products_;
};

// max-autotune's timed products (lt_gemm.h): one kernel record each, after the GEMM sites', whose autotune
// table lists every contender per problem (LibTorch's product and cuBLASLt's candidates).
void product_records(const std::string& compile_id, const fusion::FusedProgram& fused,
                     const AutotuneReport::Products& products, runtime::RegionArtifacts& art) {
  for (const auto& [comp, lt] : products) {
    records::Kernel k;
    k.name = "product_" + fused.program.comps[comp].name;
    k.compile_id = compile_id;
    k.language = "cublas";
    k.nodes = {fused.program.comps[comp].name};
    k.launch_config = "LibTorch's product (cublasGemmEx) or one of cuBLASLt's algorithms, chosen per problem by "
                      "device time (see the autotune table)";
    art.kernels.push_back(std::move(k));
  }
}

// max-autotune: every linear extern also races cuBLAS against Kiln's TF32 GEMM template, with the
// pointwise kernel after it fused into the template's epilogue where it fits. Adds one kernel
// record per GEMM site (after the generated kernels: the order of the autotune tables).
std::vector<runtime::GemmSite> gemm_sites(const std::string& compile_id, const fusion::FusedProgram& fused,
                                          const std::string& prelude, runtime::RegionArtifacts& art) {
  std::vector<runtime::GemmSite> sites;
  for (size_t s = 0; s < fused.steps.size(); ++s) {
    const auto& step = fused.steps[s];
    if (step.kind == fusion::Step::Kind::Kernel) continue;
    const auto& comp = fused.program.comps[step.index];
    if (comp.target != "aten::linear" || comp.drop_bias) continue;
    runtime::GemmSite site;
    site.comp = static_cast<size_t>(step.index);
    site.name = comp.name;
    if (s + 1 < fused.steps.size() && fused.steps[s + 1].kind == fusion::Step::Kind::Kernel && !prelude.empty()) {
      const auto& tail = fused.kernels[fused.steps[s + 1].index];
      site.epilogue = codegen::gemm_epilogue(fused, step.index, tail, prelude);
      if (site.epilogue) {
        site.tail_kernel = fused.steps[s + 1].index;
        site.tail_comps = tail.comps;
      }
    }
    records::Kernel gk;
    gk.name = "gemm_" + comp.name;
    gk.compile_id = compile_id;
    gk.language = "cuda";
    gk.source = codegen::gemm_tf32_source({64, 64}, site.epilogue ? &*site.epilogue : nullptr);
    gk.nodes = {comp.name};
    if (site.epilogue)
      for (const auto& nd : fused.kernels[site.tail_kernel].nodes) gk.nodes.push_back(nd);
    gk.launch_config = "cuBLAS or a Kiln TF32 tensor-core tile (chosen by timing; see the autotune table)" +
                       std::string(site.epilogue ? "; the tile runs " + site.epilogue->kernel + " as its epilogue" : "");
    art.kernels.push_back(std::move(gk));
    sites.push_back(std::move(site));
  }
  return sites;
}

// Which 16-bit products Kiln computes with its own kernel (runtime/cuda/half_gemm.h) in this mode: every one with
// --products kiln; with auto, default mode's up to KILN_OWN_PRODUCT_MAX_GFLOP where that is set (own_product_max_flop);
// none otherwise (bound < 0).
double own_product_bound(const runtime::BackendOptions& o) {
  if (o.products == "kiln") return 0;
  if (o.products == "auto" && o.mode == "default") return runtime::own_product_max_flop();
  return -1;
}

bool is_half(ir::DType t) { return t == ir::DType::BFloat16 || t == ir::DType::Float16; }

// A product's sizes where they are constants (0 where not): n from its result's last size, k from its first matrix
// operand's (addmm's second argument), its work 2·m·n·k from all of its result's sizes and k.
struct ProductSize {
  double flop = 0;
  int64_t n = 0, k = 0;
};

ProductSize product_size(const lowering::LoopProgram& p, const lowering::Comp& c) {
  ProductSize out;
  std::map<std::string, int64_t> none;
  const size_t a = c.target == "aten::addmm" ? 1 : 0;
  if (!c.sizes.empty())
    if (auto v = capture::sym_eval(c.sizes.back(), none)) out.n = *v;
  if (c.operands.size() > a && c.operands[a] >= 0 && !p.comps[static_cast<size_t>(c.operands[a])].sizes.empty())
    if (auto v = capture::sym_eval(p.comps[static_cast<size_t>(c.operands[a])].sizes.back(), none)) out.k = *v;
  if (out.k == 0) return out;
  double flop = 2.0 * static_cast<double>(out.k);
  for (const auto& s : c.sizes) {
    auto v = capture::sym_eval(s, none);
    if (!v) return out;
    flop *= static_cast<double>(*v);
  }
  out.flop = flop;
  return out;
}

// The region's 16-bit products that Kiln's kernel may take: the products of matrices it calls directly, those
// cuBLASLt may take too (runtime::prepare_region_extern gives them `lt`). What LoweredRegionFn::use_own_products
// gives a kernel to, found without building the region (kiln compile --cuda-arch).
std::vector<bool> own_product_calls(const lowering::LoopProgram& p, const std::vector<const torch::jit::Node*>& nodes) {
  std::vector<bool> out(p.comps.size(), false);
  for (size_t c = 0; c < p.comps.size(); ++c) {
    const auto& comp = p.comps[c];
    if (comp.kind != lowering::Comp::Kind::Extern || !is_half(comp.dtype) || comp.ir_node < 0 ||
        static_cast<size_t>(comp.ir_node) >= nodes.size())
      continue;
    auto d = runtime::prepare_region_extern(p.comps, c, nodes[static_cast<size_t>(comp.ir_node)]);
    out[c] = d && d->lt;
  }
  return out;
}

// Says on each 16-bit product's extern line who computes it on the GPU: Kiln's kernel where the region gives it
// the call (`given`, per computation) and its shape is within the bound (and its sizes the kernel's: k and n
// multiples of 8), cuBLAS otherwise. Returns how many are Kiln's.
int note_own_products(const lowering::LoopProgram& p, double bound, const std::vector<bool>& given,
                      runtime::RegionArtifacts& art) {
  if (bound < 0) return 0;
  int own = 0;
  for (size_t i = 0; i < p.comps.size(); ++i) {
    const auto& c = p.comps[i];
    const bool product = c.target == "aten::linear" || c.target == "aten::mm" || c.target == "aten::matmul" ||
                         c.target == "aten::addmm";
    if (c.kind != lowering::Comp::Kind::Extern || !product || !is_half(c.dtype)) continue;
    const ProductSize size = product_size(p, c);
    const bool multiples = size.n % 8 == 0 && size.k % 8 == 0;
    std::ostringstream what;
    what.precision(3);
    if (i >= given.size() || !given[i]) {
      // Kiln's kernel takes a product of two matrices alone: not one with its bias in the call (a linear or addmm
      // whose readers cannot add it), nor a batched one.
      const bool batched = c.target == "aten::matmul" && c.operands.size() == 2 && c.operands[1] >= 0 &&
                           p.comps[static_cast<size_t>(c.operands[1])].sizes.size() != 2;
      what << " (cuBLAS: "
           << (batched ? "a batched product"
               : c.bias_operand >= 0 && !c.drop_bias ? "its bias added in the same call"
                                                     : "a call Kiln's kernel does not take")
           << ")";
    } else if (size.flop > 0 && size.n > 0 && multiples && (bound == 0 || size.flop <= bound)) {
      what << " (Kiln's tensor-core product, " << size.flop / 1e9 << " Gflop)";
      ++own;
    } else if (size.flop > 0) {
      what << " (cuBLAS: " << size.flop / 1e9 << " Gflop"
           << (bound > 0 && size.flop > bound ? ", above Kiln's products' bound" : "")
           << (multiples ? "" : ", sizes not multiples of 8") << ")";
    } else {
      what << " (Kiln's tensor-core product where a call's shapes allow)";
    }
    const std::string head = c.target + " -> " + c.name;
    for (auto& e : art.externs)
      if (e.rfind(head, 0) == 0 && (e.size() == head.size() || e[head.size()] == ' ')) {
        e += what.str();
        break;
      }
  }
  return own;
}

}  // namespace

CudaTarget::CudaTarget(const runtime::BackendOptions& options)
    : options_(options), set_(std::make_shared<runtime::GpuKernelSet>()) {}

std::string CudaTarget::emit(const fusion::FusedProgram& fused, const std::vector<codegen::NodeNote>& notes,
                             std::vector<codegen::KernelSpan>& spans) {
  info_.clear();
  std::string source = codegen::emit_cuda(fused, notes, &info_, options_.mode == "max-autotune");
  for (const auto& k : info_) spans.push_back({k.name, k.source_begin, k.function_end});
  return source;
}

pipeline::Loaded CudaTarget::compile(const std::string& source, const fusion::FusedProgram& fused, const ir::Graph& graph) {
  registers_.clear();
  auto& set = *set_;
  set.info = info_;
  set.symbols = fused.program.symbols;
  set.args.nbuf = std::max<size_t>(1, fused.program.comps.size());
  set.args.nscalar = std::max<size_t>(1, fused.program.scalar_inputs.size());
  set.args.nsym = std::max<size_t>(1, fused.program.symbols.size());
  set.args.buffer_count = fused.program.comps.size();
  set.args.scalar_count = fused.program.scalar_inputs.size();
  set.args.sym_count = fused.program.symbols.size();
  set.autotune = options_.mode == "max-autotune";
  pipeline::Loaded out;
  out.keep = set_;
  std::vector<std::string> names;
  for (const auto& k : info_) {
    names.push_back(k.name);
    for (size_t v = 1; v < k.variants.size(); ++v) names.push_back(k.variants[v].function);
  }
  if (names.empty()) return out;
  // One translation unit per kernel, compiled in parallel and cached one by one; kernels of the same code (a
  // model's repeated blocks) run the front end once (kernel_units.h).
  auto units = codegen::kernel_units(source, info_);
  const bool build_only = !options_.cuda_build_arch.empty();
  const std::string arch = build_only ? options_.cuda_build_arch : cuda::device_arch();
  auto compiling = std::async(std::launch::async, [&units, &arch] {
    return codegen::compile_cuda_units(units.sources, arch, 0, &units.groups);
  });
  // Meanwhile, on this thread (LibTorch's cuDNN plan cache is per thread, and the first call runs here):
  // under max-autotune with cuDNN benchmark mode, as make_region_fn's first call will run them.
  // The attention calls too (their library's kernels loaded and built). KILN_CONV_WARMUP=0 leaves both to the first
  // call (an A/B of the cold compile).
  const char* warm = std::getenv("KILN_CONV_WARMUP");
  if (!build_only && !(warm && std::string(warm) == "0")) {
    runtime::warm_convolutions(graph, fused.program, "cuda", options_.mode == "max-autotune");
    runtime::warm_attention(fused.program, "cuda");
  }
  auto bins = compiling.get();
  out.cache_hit = bins.all_cached;
  out.workers = bins.workers;
  out.assembled = bins.assembled;
  for (const auto& b : bins.units) {
    out.compiler_invocations += b.cache_hit ? 0 : 1;
    if (!b.cache_hit) out.unit_ms.push_back(b.compile_ms);
    for (auto& r : codegen::cubin_resources(b.cubin)) {
      registers_[r.function] = r.registers;
      out.resources.push_back({r.function, r.registers, r.stack_bytes});
    }
  }
  if (build_only) return out;  // nothing loaded: no GPU here
  auto t0 = Clock::now();
  for (size_t u = 0; u < bins.units.size(); ++u) {
    std::vector<std::string> fns;
    if (units.sources.size() == 1) fns = names;
    else
      for (const auto& v : info_[u].variants) fns.push_back(v.function);
    set.modules.push_back(std::make_shared<cuda::Module>(bins.units[u].cubin, fns));
  }
  out.load_ms = ms_since(t0);
  out.calls = runtime::make_gpu_calls(set_);
  return out;
}

void CudaTarget::describe(const fusion::FusedKernel& k, records::Kernel& record) const {
  bool row = k.kind == fusion::FusedKernel::Kind::Row;
  const codegen::CudaKernelInfo* ki = nullptr;
  for (const auto& x : info_)
    if (x.name == k.name) ki = &x;
  bool warp = ki && !ki->variants.empty() && ki->variants[0].warp_per_row;
  bool column = ki && !ki->variants.empty() && ki->variants[0].thread_per_row;
  const int tile = ki && !ki->variants.empty() ? ki->variants[0].row_tile : 0;
  const int tile_threads = tile ? ki->variants[0].threads : 0;
  record.launch_config = row ? (tile ? "rows in tiles of " + std::to_string(tile) + ", " + std::to_string(tile_threads) +
                                           " threads per block (" + std::to_string(tile_threads / tile) + " slices per row)"
                                : column ? "one thread per row, 256 threads per block"
                                : warp ? "one warp per row, 8 rows per 256-thread block"
                                       : "one block per row, 256 threads")
                             : "grid-stride, 256 threads, " +
                                   (ki && !ki->variants.empty() && ki->variants[0].window_rows
                                        ? std::to_string(ki->vector_width / (ki->variants[0].window_lanes *
                                                                             ki->variants[0].window_height)) +
                                              " outputs along the width x " +
                                              (ki->variants[0].window_height > 1
                                                   ? std::to_string(ki->variants[0].window_height) + " along the height x "
                                                   : std::string()) +
                                              std::to_string(ki->variants[0].window_lanes) + " channels per thread"
                                        : std::to_string(ki ? ki->vector_width : 1) + " elements per thread");
  for (size_t u = 0; u < info_.size() && !set_->modules.empty(); ++u)
    if (info_[u].name == k.name) record.registers = set_->module(u).registers(k.name);
  if (record.registers == 0) {  // built for an architecture with no GPU here: the binary's own record
    auto r = registers_.find(k.name);
    if (r != registers_.end()) record.registers = r->second;
  }
}

std::unique_ptr<runtime::CompiledFn> CudaTarget::make_region_fn(const capture::SpecializedRegion& entry,
                                                                const capture::RegionStatic& region,
                                                                pipeline::CompiledCode code,
                                                                runtime::RegionArtifacts& art) {
  if (!options_.cuda_build_arch.empty()) {
    art.note = "CUDA kernels built for " + options_.cuda_build_arch + ", not run: the region runs eagerly here";
    const auto& program = code.front.fused.program;
    const auto given = own_product_calls(program, entry.graph_nodes);
    if (note_own_products(program, own_product_bound(options_), given, art) > 0) {
      // Kiln's product kernels of the types its products have, built for that architecture too.
      auto t0 = Clock::now();
      for (bool bf16 : {true, false}) {
        const auto type = bf16 ? ir::DType::BFloat16 : ir::DType::Float16;
        bool used = false;
        for (size_t c = 0; c < given.size(); ++c) used = used || (given[c] && program.comps[c].dtype == type);
        if (used) codegen::compile_cuda(codegen::half_gemm_source(codegen::half_gemm_kernels(bf16)), options_.cuda_build_arch);
      }
      art.stage_ms.push_back({"own products", ms_since(t0)});
    }
    return nullptr;
  }
  const fusion::FusedProgram& fused = code.front.fused;
  const bool autotune = options_.mode == "max-autotune";
  std::shared_ptr<runtime::GemmTuner> gemms;
  std::set<size_t> site_comps;  // linears the GEMM tuner runs (its own cuBLASLt row among its candidates)
  if (autotune) {
    const std::string prelude = info_.empty() ? "" : code.source.substr(0, info_[0].prelude_end);
    auto sites = gemm_sites(entry.info.compile_id, fused, prelude, art);
    for (const auto& site : sites) site_comps.insert(site.comp);
    if (!sites.empty()) {
      auto t0 = Clock::now();
      gemms = std::make_shared<runtime::GemmTuner>(std::move(sites), set_->args);
      gemms->precompile();
      art.stage_ms.push_back({"gemm templates", ms_since(t0)});
    }
  }
  // max-autotune also lets cuDNN time its algorithms for every convolution (benchmark mode,
  // per shape, on the first call: the warm-up before a CUDA graph records).
  const bool benchmark_convs =
      autotune && std::any_of(fused.steps.begin(), fused.steps.end(), [&](const fusion::Step& step) {
        return step.kind == fusion::Step::Kind::Extern && lowering::is_conv2d_target(fused.program.comps[step.index].target);
      });
  for (auto& e : art.externs) {
    if (benchmark_convs && e.rfind("aten::conv", 0) == 0) e += " (cuDNN benchmark mode: algorithm chosen by timing)";
    if (autotune && (e.rfind("aten::mm", 0) == 0 || e.rfind("aten::matmul", 0) == 0 || e.rfind("aten::linear", 0) == 0))
      e += " (matrix products: cuBLASLt's candidates and LibTorch's own timed, the fastest kept)";
  }
  auto region_fn = std::make_unique<runtime::LoweredRegionFn>(entry, region, std::move(code.front.lowered),
                                                              std::move(code.front.fused),
                                                              std::move(code.loaded.calls), code.loaded.keep,
                                                              std::move(code.front.plan));
  // The 16-bit products Kiln computes with its own kernel (runtime/cuda/half_gemm.h): default mode's small ones,
  // or every one with --products kiln. The kernels compile here (cold compile), once per process and type.
  if (const double bound = own_product_bound(options_); bound >= 0) {
    auto t0 = Clock::now();
    std::shared_ptr<runtime::OwnProduct> per_type[2];
    const auto given = region_fn->use_own_products([&](const lowering::Comp& c) -> std::shared_ptr<runtime::OwnProduct> {
      if (!is_half(c.dtype)) return nullptr;
      const bool bf16 = c.dtype == ir::DType::BFloat16;
      auto& own = per_type[bf16 ? 1 : 0];
      if (!own) own = runtime::half_gemms(bound, bf16);
      return own;
    });
    if (std::find(given.begin(), given.end(), true) != given.end()) {
      art.stage_ms.push_back({"own products", ms_since(t0)});
      note_own_products(fused.program, bound, given, art);
    }
  }
  AutotuneReport::Products products;
  if (autotune) {
    products = region_fn->tune_products();
    // Not the GEMM tuner's linears: its table has their cuBLASLt row.
    products.erase(std::remove_if(products.begin(), products.end(),
                                  [&](const auto& p) { return site_comps.count(p.first) > 0; }),
                   products.end());
    product_records(entry.info.compile_id, region_fn->fused(), products, art);
  }
  if (gemms)
    region_fn->set_extern_hook([gemms](size_t comp, const torch::jit::Node* n, capture::Interpreter::Env& env,
                                       capture::Interpreter& interp, at::Tensor& out,
                                       runtime::LoweredRegionFn::ExternContext& cx) {
      return gemms->run(comp, n, env, interp, out, cx);
    });
  // The convolutions stay the prepared calls on the region's buffers, as in the other modes. Interpreted instead (the
  // node's own arguments, its outputs copied into the region's layout), ResNet-18 b1 ran 17 more ATen copy kernels
  // per call, 0.064 ms of its 0.336 on the H200, and its stem on an NCHW algorithm.
  region_fn->set_cudnn_benchmark(benchmark_convs);
  std::unique_ptr<runtime::CompiledFn> fn = std::move(region_fn);
  if (options_.mode == "reduce-overhead" || autotune)
    fn = runtime::make_cuda_graph_fn(std::move(fn), region.inputs, region.outputs, &region);
  return std::make_unique<AutotuneReport>(std::move(fn), set_, gemms, std::move(products));
}

}  // namespace kiln::backends
#endif
