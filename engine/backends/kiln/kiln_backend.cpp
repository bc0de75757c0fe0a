#include "engine/backends/kiln/kiln_backend.h"

#include <chrono>
#include <set>

#include "engine/base/error.h"
#include "engine/codegen/cpp/cpp_compiler.h"
#include "engine/codegen/cpp/emit_cpp.h"
#include "engine/ir/print_text.h"
#include "engine/lowering/channels_last.h"
#include "engine/lowering/lower_graph.h"
#include "engine/pipeline/front_end.h"
#include "engine/pipeline/stages.h"
#include "engine/runtime/lowered_region.h"
#if KILN_WITH_CUDA
#include <ATen/Context.h>

#include "engine/codegen/cuda/emit_cuda.h"
#include "engine/codegen/cuda/nvrtc_compiler.h"
#include "engine/runtime/cuda/cuda_driver.h"
#include "engine/codegen/cuda/gemm_epilogue.h"
#include "engine/codegen/cuda/gemm_template.h"
#include "engine/runtime/cuda/cuda_graph_fn.h"
#include "engine/runtime/cuda/gemm_tuner.h"
#include "engine/runtime/cuda/gpu_kernels.h"
#endif

namespace kiln::backends {

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

#if KILN_WITH_CUDA
// Forwards to the region's callable and reports the autotuning tables of its kernels.
class AutotuneReport : public runtime::CompiledFn {
 public:
  AutotuneReport(std::unique_ptr<runtime::CompiledFn> inner, std::shared_ptr<runtime::GpuKernelSet> set,
                 std::shared_ptr<runtime::GemmTuner> gemms = nullptr)
      : inner_(std::move(inner)), set_(std::move(set)), gemms_(std::move(gemms)) {}
  void run(capture::Interpreter& interp, capture::Interpreter::Env& env) override { inner_->run(interp, env); }
  std::vector<std::string> take_log() override { return inner_->take_log(); }
  // Generated kernels first, then the GEMMs: the order of the region's kernel records.
  std::vector<std::vector<records::AutotuneCandidate>> autotune() const override {
    auto out = set_->candidates;
    if (gemms_)
      for (auto& t : gemms_->tables()) out.push_back(std::move(t));
    return out;
  }

 private:
  std::unique_ptr<runtime::CompiledFn> inner_;
  std::shared_ptr<runtime::GpuKernelSet> set_;
  std::shared_ptr<runtime::GemmTuner> gemms_;
};
#endif

class KilnBackend : public runtime::Backend {
 public:
  explicit KilnBackend(bool fuse) : fuse_(fuse) {}
  std::string name() const override { return fuse_ ? "kiln" : "aot_eager"; }

  std::unique_ptr<runtime::CompiledFn> compile(const capture::SpecializedRegion& entry, const capture::RegionStatic& region,
                                               const runtime::BackendOptions& options,
                                               runtime::RegionArtifacts& art) override {
    const ir::Graph& graph = entry.info.graph;
    bool on_gpu = false;
    for (const auto& n : graph.nodes)
      if (n.op == ir::NodeOp::Placeholder && !n.outputs.empty() && n.outputs[0].meta.device.rfind("cuda", 0) == 0)
        on_gpu = true;
    // lower -> layout -> schedule: one driver times, dumps and verifies each pass (pipeline/front_end.h).
    pipeline::FrontEndOptions fe;
    fe.fuse = fuse_;
    fe.channels_last = options.conv_layout == "channels-last" || (options.conv_layout == "auto" && on_gpu);
    pipeline::FrontEnd front;
    try {
      front = pipeline::run_front_end(graph, fe, art);
    } catch (const lowering::LoweringError& e) {
      art.note = std::string("lowering failed, region runs eagerly: ") + e.what();
      return nullptr;
    }
    lowering::LoweredRegion lowered = std::move(front.lowered);
    fusion::FusedProgram fused = std::move(front.fused);
    for (const auto& d : fused.decisions)
      art.decisions.push_back(records::FusionDecision{entry.info.compile_id, d.first, d.second, d.fused, d.reason});
    for (const auto& c : fused.program.comps) {
      if (c.kind == lowering::Comp::Kind::Extern)
        art.externs.push_back(c.target + " -> " + c.name + (c.layout.empty() ? "" : " (" + lowering::layout_name(c.layout) + ")"));
    }
    art.fallbacks = lowered.fallbacks;
    // Notes for provenance comments: op and user line of every node.
    std::vector<codegen::NodeNote> notes;
    for (const auto& n : graph.nodes)
      if (n.op == ir::NodeOp::CallFunction && !n.outputs.empty())
        notes.push_back({n.name(), n.target, n.loc.str() + (n.module_path.empty() ? "" : " in " + n.module_path)});
    if (on_gpu) return compile_cuda(entry, region, options, art, std::move(lowered), std::move(fused), notes);
    auto t2 = Clock::now();
    std::vector<codegen::KernelSpan> spans;
    std::string source = codegen::emit_cpp(fused, notes, &spans);
    art.stage_ms.push_back({"codegen", ms_since(t2)});
    art.stages.push_back({pipeline::kKernelsCpp.dump_file, source});
    std::vector<std::string> names;
    for (const auto& k : fused.kernels) names.push_back(k.name);
    std::vector<runtime::KernelCall> calls;
    std::shared_ptr<void> keep;
    if (!names.empty()) {
      auto before = codegen::cpp_compiler_stats().invocations;
      auto lib = codegen::compile_cpp(source, names);
      art.compiler_invocations = codegen::cpp_compiler_stats().invocations - before;
      art.cache_hit = lib.cache_hit;
      art.stage_ms.push_back({"compile", lib.compile_ms});
      art.stage_ms.push_back({"load", lib.load_ms});
      for (const auto& n : names) calls.push_back(lib.kernels.at(n));
      keep = lib.handle;
    }
    for (const auto& k : fused.kernels) {
      records::Kernel sk = kernel_record(entry, k, "cpp", source, spans);
      sk.launch_config = k.kind == fusion::FusedKernel::Kind::Row ? "row kernel, OpenMP over rows" : "pointwise, OpenMP over the outer loop";
      art.kernels.push_back(std::move(sk));
    }
    return std::make_unique<runtime::LoweredRegionFn>(entry, region, std::move(lowered), std::move(fused),
                                                      std::move(calls), keep);
  }

 private:
  std::unique_ptr<runtime::CompiledFn> compile_cuda(const capture::SpecializedRegion& entry,
                                                    const capture::RegionStatic& region,
                                                    const runtime::BackendOptions& options, runtime::RegionArtifacts& art,
                                                    lowering::LoweredRegion lowered, fusion::FusedProgram fused,
                                                    const std::vector<codegen::NodeNote>& notes) {
#if KILN_WITH_CUDA
    auto t2 = Clock::now();
    std::vector<codegen::CudaKernelInfo> info;
    std::string source = codegen::emit_cuda(fused, notes, &info, options.mode == "max-autotune");
    art.stage_ms.push_back({"codegen", ms_since(t2)});
    art.stages.push_back({pipeline::kKernelsCuda.dump_file, source});
    auto set = std::make_shared<runtime::GpuKernelSet>();
    set->info = info;
    set->symbols = fused.program.symbols;
    set->args.nbuf = std::max<size_t>(1, fused.program.comps.size());
    set->args.nscalar = std::max<size_t>(1, fused.program.scalar_inputs.size());
    set->args.nsym = std::max<size_t>(1, fused.program.symbols.size());
    set->args.buffer_count = fused.program.comps.size();
    set->args.scalar_count = fused.program.scalar_inputs.size();
    set->args.sym_count = fused.program.symbols.size();
    set->autotune = options.mode == "max-autotune";
    std::vector<std::string> names;
    for (const auto& k : info) {
      names.push_back(k.name);
      for (size_t v = 1; v < k.variants.size(); ++v) names.push_back(k.variants[v].function);
    }
    if (!names.empty()) {
      // One translation unit per kernel, compiled in parallel and cached one by one.
      auto units = codegen::cuda_units(source, info);
      auto bins = codegen::compile_cuda_units(units, cuda::device_arch());
      art.cache_hit = bins.all_cached;
      art.compiler_invocations = 0;
      for (const auto& b : bins.units) art.compiler_invocations += b.cache_hit ? 0 : 1;
      art.stage_ms.push_back({"nvrtc", bins.wall_ms});
      auto t3 = Clock::now();
      for (size_t u = 0; u < bins.units.size(); ++u) {
        std::vector<std::string> fns;
        if (units.size() == 1) fns = names;
        else
          for (const auto& v : info[u].variants) fns.push_back(v.function);
        set->modules.push_back(std::make_shared<cuda::Module>(bins.units[u].cubin, fns));
      }
      art.stage_ms.push_back({"load", ms_since(t3)});
    }
    std::vector<codegen::KernelSpan> spans;
    for (const auto& k : info) spans.push_back({k.name, k.source_begin, k.function_end});
    for (const auto& k : fused.kernels) {
      records::Kernel sk = kernel_record(entry, k, "cuda", source, spans);
      bool row = k.kind == fusion::FusedKernel::Kind::Row;
      const codegen::CudaKernelInfo* ki = nullptr;
      for (const auto& x : info)
        if (x.name == k.name) ki = &x;
      bool warp = ki && !ki->variants.empty() && ki->variants[0].warp_per_row;
      bool column = ki && !ki->variants.empty() && ki->variants[0].thread_per_row;
      sk.launch_config = row ? (column ? "one thread per row, 256 threads per block"
                                : warp ? "one warp per row, 8 rows per 256-thread block"
                                       : "one block per row, 256 threads")
                             : "grid-stride, 256 threads, " + std::to_string(ki ? ki->vector_width : 1) +
                                   " elements per thread";
      for (size_t u = 0; u < info.size() && !set->modules.empty(); ++u)
        if (info[u].name == k.name) sk.registers = set->module(u).registers(k.name);
      art.kernels.push_back(std::move(sk));
    }
    // max-autotune: every linear extern also races cuBLAS against Kiln's TF32 GEMM template, with the
    // pointwise kernel after it fused into the template's epilogue where it fits.
    std::shared_ptr<runtime::GemmTuner> gemms;
    if (options.mode == "max-autotune") {
      std::vector<runtime::GemmSite> sites;
      const std::string prelude = info.empty() ? "" : source.substr(0, info[0].prelude_end);
      for (size_t s = 0; s < fused.steps.size(); ++s) {
        const auto& step = fused.steps[s];
        if (step.kind == fusion::Step::Kind::Kernel) continue;
        const auto& comp = fused.program.comps[step.index];
        if (comp.target != "aten::linear") continue;
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
        gk.compile_id = entry.info.compile_id;
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
      if (!sites.empty()) {
        auto t4 = Clock::now();
        gemms = std::make_shared<runtime::GemmTuner>(std::move(sites), set->args);
        gemms->precompile();
        art.stage_ms.push_back({"gemm templates", ms_since(t4)});
      }
    }
    auto calls = names.empty() ? std::vector<runtime::KernelCall>{} : runtime::make_gpu_calls(set);
    std::shared_ptr<void> keep = set;
    auto region_fn = std::make_unique<runtime::LoweredRegionFn>(entry, region, std::move(lowered), std::move(fused),
                                                                std::move(calls), keep);
    // max-autotune also lets cuDNN time its algorithms for every convolution (benchmark mode,
    // per shape, on the first call: the warm-up before a CUDA graph records).
    std::set<size_t> convs;
    if (options.mode == "max-autotune")
      for (const auto& step : fused.steps)
        if (step.kind == fusion::Step::Kind::Extern && lowering::is_conv2d_target(fused.program.comps[step.index].target))
          convs.insert(static_cast<size_t>(step.index));
    for (auto& e : art.externs)
      if (!convs.empty() && e.rfind("aten::conv", 0) == 0) e += " (cuDNN benchmark mode: algorithm chosen by timing)";
    if (gemms || !convs.empty())
      region_fn->set_extern_hook([gemms, convs](size_t comp, const torch::jit::Node* n, capture::Interpreter::Env& env,
                                                capture::Interpreter& interp, at::Tensor& out,
                                                runtime::LoweredRegionFn::ExternContext& cx) {
        if (convs.count(comp)) {
          auto& ctx = at::globalContext();
          const bool before = ctx.benchmarkCuDNN();
          ctx.setBenchmarkCuDNN(true);
          try {
            out = interp.exec_node(n, env).at(0).toTensor();
          } catch (...) {
            ctx.setBenchmarkCuDNN(before);
            throw;
          }
          ctx.setBenchmarkCuDNN(before);
          return true;
        }
        return gemms && gemms->run(comp, n, env, interp, out, cx);
      });
    std::unique_ptr<runtime::CompiledFn> fn = std::move(region_fn);
    if (options.mode == "reduce-overhead" || options.mode == "max-autotune")
      fn = runtime::make_cuda_graph_fn(std::move(fn), region.inputs, region.outputs);
    return std::make_unique<AutotuneReport>(std::move(fn), set, gemms);
#else
    (void)entry; (void)region; (void)options; (void)lowered; (void)fused; (void)notes;
    art.note = "this Kiln was built without the CUDA toolkit; region runs eagerly";
    return nullptr;
#endif
  }

  // What every kernel record holds, in either language: name, region, its function's source (where
  // the emitter says it is), provenance.
  static records::Kernel kernel_record(const capture::SpecializedRegion& entry, const fusion::FusedKernel& k,
                                       const char* language, const std::string& source,
                                       const std::vector<codegen::KernelSpan>& spans) {
    records::Kernel sk;
    sk.name = k.name;
    sk.compile_id = entry.info.compile_id;
    sk.language = language;
    sk.source = codegen::kernel_text(source, spans, k.name);
    sk.nodes = k.nodes;
    return sk;
  }
  bool fuse_;
};

}  // namespace

std::unique_ptr<runtime::Backend> make_kiln_backend(bool fuse) { return std::make_unique<KilnBackend>(fuse); }

}  // namespace kiln::backends
