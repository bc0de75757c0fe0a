#include "engine/runtime/captured_runtime.h"
#include "kiln_build_config.h"

#include <filesystem>
#include <optional>

#include "engine/base/error.h"
#include "engine/capture/guards.h"
#include "engine/profile/host_trace.h"
#if KILN_WITH_CUDA
#include "engine/runtime/cuda/cuda_graph_fn.h"
#endif
#include "engine/runtime/inference_guard.h"

namespace kiln::runtime {

using capture::Event;
namespace fs = std::filesystem;

static capture::SourceFiles sources_for(const std::string& model_path) {
  fs::path dir = fs::path(model_path).parent_path();
  if (dir.empty()) dir = ".";
  return capture::SourceFiles({dir.string(), (dir / "src").string()});
}

// Whether a region called with these inputs will run as CUDA graphs: the modes that record them
// (reduce-overhead, and max-autotune as in torch.compile) or the cudagraphs backend, on a GPU.
[[maybe_unused]] static bool records_cuda_graphs(const capture::CompileOptions& o, const std::string& backend,
                                const std::vector<c10::IValue>& inputs) {
  if (o.mode != "reduce-overhead" && o.mode != "max-autotune" && backend != "cudagraphs") return false;
  for (const auto& v : inputs)
    if (v.isTensor() && v.toTensor().is_cuda()) return true;
  return false;
}

CapturedRuntime::CapturedRuntime(const model::Model& model, capture::CompileOptions options)
    : CapturedRuntime(model, options, make_backend(options.backend)) {}

CapturedRuntime::CapturedRuntime(const model::Model& model, capture::CompileOptions options,
                                 std::unique_ptr<Backend> backend)
    : model_(model),
      options_(std::move(options)),
      sources_(sources_for(model.path())),
      interp_(model.impl->graph),
      start_(std::chrono::steady_clock::now()) {
  if (options_.cache_limit < 1)
    throw Error("--cache-limit " + std::to_string(options_.cache_limit) + ": must be at least 1");
  capture::PartitionOptions po;
  po.unroll_limit = options_.unroll_limit;
  partition_ = capture::partition_graph(*model.impl->graph, sources_, po);
  caches_.resize(partition_.regions.size());
  backend_ = std::move(backend);
  if (!backend_) throw Error("no backend given");
  if (backend_->whole_model())
    throw Error("backend '" + backend_->name() + "' compiles the whole module with its own compiler, not Kiln's " +
                "captured regions: kiln profile --backends " + backend_->name() + " measures it beside the modes");
  break_hits_.assign(partition_.breaks.size(), 0);
  if (options_.fullgraph && !partition_.breaks.empty()) {
    const auto& b = partition_.breaks.front();
    throw Error(model.path() + ": fullgraph=True but the model has " + std::to_string(partition_.breaks.size()) +
                " graph break" + (partition_.breaks.size() == 1 ? "" : "s") + "; the first: " + b.id + " " + b.reason +
                " at " + (b.loc.known() ? b.loc.str() : std::string("an unknown line")) +
                (b.loc.text.empty() ? "" : " (" + b.loc.text + ")"));
  }
}

void CapturedRuntime::event(Event::Kind k, int region, const std::string& compile_id, const std::string& message) {
  Event e;
  e.kind = k;
  e.t_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start_).count();
  e.call = call_;
  e.region = region;
  e.compile_id = compile_id;
  e.message = message;
  events_.push_back(std::move(e));
}

std::vector<c10::IValue> CapturedRuntime::run(const std::vector<at::Tensor>& inputs, std::ostream* print_sink) {
  ++call_;
  hooks_.print_sink = print_sink;
  const auto& gin = model_.impl->graph->inputs();
  if (inputs.size() + 1 != gin.size())
    throw Error(model_.path() + ": forward takes " + std::to_string(gin.size() - 1) + " inputs, " +
                std::to_string(inputs.size()) + " given");
  check_exported_shapes(inputs);
  Env env;
  env[gin[0]] = model_.impl->frozen._ivalue();
  for (size_t i = 0; i < inputs.size(); ++i) env[gin[i + 1]] = inputs[i];
  InferenceGuard inference;
  interp_.clear_failure();
  try {
    run_program(partition_.main, env);
  } catch (const Error& e) {
    // Name the graph node and the source line where it happened, when the interpreter knows them.
    const torch::jit::Node* n = interp_.failed_node();
    if (!n) throw;
    auto o = capture::node_origin(n, sources_);
    if (!o.loc.known()) throw;
    throw Error(std::string(e.what()) + " (at " + o.loc.str() + (o.loc.text.empty() ? "" : ": " + o.loc.text) + ")");
  }
  std::vector<c10::IValue> outs;
  for (const auto* v : model_.impl->graph->outputs()) outs.push_back(capture::lookup(env, v));
  return outs;
}

// An exported program states its input shapes: each dimension a number, or a symbol whose range its
// range_constraints give. A call outside them is one error naming the input, the dimension and what
// the program allows (as torch's own exported module refuses it).
void CapturedRuntime::check_exported_shapes(const std::vector<at::Tensor>& inputs) const {
  const auto& spec = model_.impl->exported_inputs;
  if (!model_.impl->exported_program) return;
  const auto& gin = model_.impl->graph->inputs();
  for (size_t i = 0; i < inputs.size() && i < spec.size(); ++i) {
    if (spec[i].empty() || !inputs[i].defined()) continue;
    const std::string name = gin[i + 1]->debugName();
    if (inputs[i].dim() != static_cast<int64_t>(spec[i].size()))
      throw Error(model_.path() + ": input " + name + " has " + std::to_string(inputs[i].dim()) +
                  " dimensions; the exported program takes " + std::to_string(spec[i].size()));
    for (const auto& d : spec[i]) {
      const int64_t got = inputs[i].size(d.dim);
      const std::string at = name + ".size(" + std::to_string(d.dim) + ") = " + std::to_string(got);
      if (d.symbol.empty() && got != d.size)
        throw Error(model_.path() + ": input " + at + ", but the program was exported with " + std::to_string(d.size) +
                    " there (a static dimension; export with torch.export.Dim to make it dynamic)");
      if (!d.symbol.empty() && (got < d.min || got > d.max))
        throw Error(model_.path() + ": input " + at + " is outside the range the program was exported for: " +
                    std::to_string(d.min) + " <= " + d.symbol + " <= " +
                    (d.max == INT64_MAX ? std::string("inf") : std::to_string(d.max)));
    }
  }
}

// The region inputs that are forward arguments of an exported program with a symbolic dimension:
// (input position, dim) → that dimension, so they are dynamic from the first compile (as the program
// says) and their guards name the program's range.
std::map<std::pair<int, int>, model::ExportedDim> CapturedRuntime::exported_dynamic_dims(const capture::RegionStatic& region) const {
  std::map<std::pair<int, int>, model::ExportedDim> out;
  const auto& spec = model_.impl->exported_inputs;
  if (!model_.impl->exported_program || spec.empty()) return out;
  const auto& gin = model_.impl->graph->inputs();
  for (size_t i = 0; i < region.inputs.size(); ++i)
    for (size_t a = 0; a < spec.size() && a + 1 < gin.size(); ++a)
      if (region.inputs[i] == gin[a + 1])
        for (const auto& d : spec[a])
          if (!d.symbol.empty()) out[{static_cast<int>(i), d.dim}] = d;
  return out;
}

void CapturedRuntime::run_program(const capture::Program& p, Env& env) {
  for (const auto& step : p.steps) {
    switch (step.kind) {
      case capture::Step::Kind::Region: run_region(step.region, env); break;
      case capture::Step::Kind::Interpret: {
        const bool traced = profile::HostTrace::active() != nullptr;  // names built only for a trace to keep
        profile::Span span("interpreter", !traced ? std::string()
                                                  : "interpreter: " + (step.nodes.empty()
                                                                          ? std::string("?")
                                                                          : std::string(step.nodes.front()->kind().toQualString())));
        for (int b : step.breaks) {
          ++break_hits_[b];
          const auto& gb = partition_.breaks[b];
          event(Event::Kind::GraphBreak, gb.ends_region, "", gb.id + " " + gb.reason + " at " + gb.loc.str());
        }
        for (const auto* n : step.nodes) {
          auto outs = interp_.exec_node(n, env, hooks_);
          for (size_t i = 0; i < n->outputs().size() && i < outs.size(); ++i) env[n->output(i)] = outs[i];
        }
        break;
      }
      case capture::Step::Kind::Branch: {
        for (int b : step.breaks) {
          ++break_hits_[b];
          const auto& gb = partition_.breaks[b];
          event(Event::Kind::GraphBreak, gb.ends_region, "", gb.id + " " + gb.reason + " at " + gb.loc.str());
        }
        bool cond = capture::lookup(env, step.control->input(0)).toBool();
        const auto* block = step.control->blocks()[cond ? 0 : 1];
        run_program(step.blocks[cond ? 0 : 1], env);
        for (size_t i = 0; i < step.control->outputs().size(); ++i)
          env[step.control->output(i)] = capture::lookup(env, block->outputs()[i]);
        break;
      }
    }
  }
}

void CapturedRuntime::run_eager(const capture::RegionStatic& region, Env& env) {
  for (const auto* n : region.nodes) {
    auto outs = interp_.exec_node(n, env, hooks_);
    for (size_t i = 0; i < n->outputs().size() && i < outs.size(); ++i) env[n->output(i)] = outs[i];
  }
}

namespace {

// What compiled code that failed said, when the failure is one the region survives by running eagerly: Kiln's own
// errors and LibTorch's (a c10::Error from an op the compiled code called, its C++ backtrace left out). Empty for
// anything else, which propagates.
std::optional<std::string> compiled_code_error(const std::exception& e) {
  if (const auto* torch_error = dynamic_cast<const c10::Error*>(&e)) return torch_error->what_without_backtrace();
  if (dynamic_cast<const Error*>(&e)) return std::string(e.what());
  return std::nullopt;
}

}  // namespace

void CapturedRuntime::run_region(int r, Env& env) {
  const auto& region = partition_.regions[r];
  auto& cache = caches_[r];
  if (options_.disable) {
    run_eager(region, env);
    return;
  }
  std::vector<c10::IValue> inputs;
  inputs.reserve(region.inputs.size());
  for (const auto* v : region.inputs) inputs.push_back(capture::lookup(env, v));

  capture::GuardFailure last;
  const bool traced = profile::HostTrace::active() != nullptr;  // names built only for a trace to keep
  profile::Span region_span("region", traced ? "region " + std::to_string(r) : std::string());
  // Newest entry first, as Dynamo's cache does.
  for (size_t k = cache.entries.size(); k-- > 0;) {
    auto& e = cache.entries[k];
    capture::GuardFailure f;
    {
      profile::Span guard_span("guard", traced ? "guards " + e.info.compile_id : std::string(), e.info.compile_id);
      f = capture::check_guards(e, inputs);
    }
    if (!f.failed()) {
      ++e.info.hits;
      region_span.set_compile_id(e.info.compile_id);
      if (cache.fns[k]) {
        try {
          cache.fns[k]->run(interp_, env);
        } catch (const std::exception& ex) {
          // Guards that passed over inputs the compiled code cannot run (capture fixed an intermediate size no guard
          // covers: every dim symbolic with dynamic=true, then another image size): this call runs the region
          // eagerly, said once per entry; an error eager raises too comes out of the eager run.
          auto why = compiled_code_error(ex);
          if (!why) throw;
          if (cache.failed.insert(k).second)
            event(Event::Kind::EagerFallback, r, e.info.compile_id,
                  std::string("compiled code ") + kFailedRunsEagerly + " on inputs its guards passed: " + *why);
          run_eager(region, env);
          return;
        }
        for (auto& msg : cache.fns[k]->take_log()) event(Event::Kind::CudaGraph, r, e.info.compile_id, msg);
      } else {
        profile::Span eager_span("kernel", traced ? "eager ops " + e.info.compile_id : std::string(), e.info.compile_id);
        capture::run_trace(e, interp_, env);
      }
      return;
    }
    if (!last.failed()) last = f;
  }
  if (!cache.entries.empty()) {
    event(Event::Kind::GuardFailure, r, cache.entries.back().info.compile_id, last.text);
  }
  if (static_cast<int>(cache.entries.size()) >= options_.cache_limit) {
    if (!cache.limit_reached) {
      cache.limit_reached = true;
      event(Event::Kind::RecompileLimit, r, "[" + std::to_string(r) + "/*]",
            "recompile limit reached: region " + std::to_string(r) + " has " + std::to_string(cache.entries.size()) +
                " cache entries (limit " + std::to_string(options_.cache_limit) + "); last failing guard: " +
                last.text + "; running it eagerly from now on");
    }
    event(Event::Kind::EagerFallback, r, "", "region " + std::to_string(r) + " ran eagerly (recompile limit)");
    run_eager(region, env);
    return;
  }
  // Dynamic dims: true = every dim symbolic; unset = automatic after a size mismatch.
  if (options_.dynamic.value_or(false)) {
    for (size_t i = 0; i < inputs.size(); ++i)
      if (inputs[i].isTensor())
        for (int64_t d = 0; d < inputs[i].toTensor().dim(); ++d) cache.dynamic.insert({static_cast<int>(i), static_cast<int>(d)});
  } else if (!options_.dynamic.has_value() && last.input >= 0) {
    cache.dynamic.insert({last.input, last.dim});
  }
  const auto exported_dims = exported_dynamic_dims(region);
  if (options_.dynamic.value_or(true))
    for (const auto& [at, _] : exported_dims) cache.dynamic.insert(at);
  auto t0 = std::chrono::steady_clock::now();
  std::string id = "[" + std::to_string(r) + "/" + std::to_string(cache.entries.size()) + "]";
  region_span.set_compile_id(id);
  profile::Span capture_span("capture", "capture " + id, id);
  capture::SpecializedRegion entry;
  try {
    auto specialize = [&] {
      entry = capture::specialize_region(region, cache.dynamic, interp_, env, options_.unroll_limit, sources_,
                                         partition_.data_values);
    };
    // A region whose calls will be CUDA graphs specializes on the stream they are captured on: its
    // cuBLAS calls then share that stream's workspace instead of making one more on this stream.
#if KILN_WITH_CUDA
    if (records_cuda_graphs(options_, backend_->name(), inputs))
      on_capture_stream(specialize);
    else
      specialize();
#else
    specialize();  // built without the CUDA toolkit: no CUDA graphs
#endif
  } catch (const capture::UnrollLimitError& e) {
    // Too large to capture (a loop unrolled past the limit): report it loudly and run eagerly.
    event(Event::Kind::UnrollLimit, r, id, e.what());
    event(Event::Kind::EagerFallback, r, id, "region " + std::to_string(r) + " ran eagerly: " + e.what());
    interp_.clear_failure();
    run_eager(region, env);
    return;
  }
  // A symbolic size of an exported program's input: its guard states the program's range.
  for (auto& g : entry.info.guards.guards) {
    if (g.kind != capture::Guard::Kind::SymbolicSize) continue;
    for (size_t i = 0; i < entry.inputs.size(); ++i) {
      if (entry.inputs[i].name != g.input) continue;
      auto it = exported_dims.find({static_cast<int>(i), g.dim});
      if (it == exported_dims.end()) continue;
      const auto& d = it->second;
      g.text = g.input + ".size(" + std::to_string(g.dim) + ") == " + g.expected + " (" + std::to_string(std::max<int64_t>(d.min, 2)) +
               " <= " + g.expected + " <= " + (d.max == INT64_MAX ? std::string("inf") : std::to_string(d.max)) +
               ": the exported program's " + d.symbol + ", " + std::to_string(d.min) + ".." +
               (d.max == INT64_MAX ? std::string("inf") : std::to_string(d.max)) + ")";
    }
  }
  entry.info.compile_id = id;
  entry.info.recompile_reason = last.text;
  entry.info.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  entry.info.hits = 1;
  if (cache.entries.empty()) {
    event(Event::Kind::Capture, r, id, "captured region " + std::to_string(r) + " (" +
                                           std::to_string(entry.info.graph.call_nodes().size()) + " ops)");
  } else {
    event(Event::Kind::Recompile, r, id, "recompiling region " + std::to_string(r) + ": " + last.text);
  }
  // The backend compiles the captured entry; the first call already runs the compiled code.
  RegionArtifacts art;
  std::shared_ptr<CompiledFn> fn;
  try {
    BackendOptions bo;
    bo.mode = options_.mode;
    bo.conv_layout = options_.conv_layout;
    bo.linear_bias = options_.linear_bias;
    bo.conv_weights = options_.conv_weights;
    bo.row_stages = options_.row_stages;
    bo.attention = options_.attention;
    bo.depthwise = options_.depthwise;
    bo.split_reductions = options_.split_reductions;
    bo.pool_windows = options_.pool_windows;
    bo.products = options_.products;
    bo.cuda_build_arch = options_.cuda_build_arch;
    {
      profile::Span compile_span("compile", "compile " + id + " (" + backend_->name() + ")", id);
      fn = backend_->compile(entry, region, bo, art);
    }
    if (fn) {
      fn->run(interp_, env);
      for (auto& msg : fn->take_log()) event(Event::Kind::CudaGraph, r, id, msg);
      auto tuned = fn->autotune();
      for (size_t i = 0; i < tuned.size() && i < art.kernels.size(); ++i) art.kernels[i].autotune = tuned[i];
    }
  } catch (const std::exception& e) {
    // The region runs eagerly, as compiled code that cannot run should; an error eager itself raises (wrong input
    // shapes) comes out of the eager run below.
    auto why = compiled_code_error(e);
    if (!why) throw;
    fn.reset();
    art.note = "backend " + backend_->name() + " " + kFailedRunsEagerly + ": " + *why;
    event(Event::Kind::EagerFallback, r, id, art.note);
    capture::run_trace(entry, interp_, env);
  }
  if (!art.note.empty() && fn == nullptr && art.note.find(kFailedRunsEagerly) == std::string::npos)
    event(Event::Kind::EagerFallback, r, id, art.note);
  cache.entries.push_back(std::move(entry));
  cache.fns.push_back(std::move(fn));
  cache.artifacts.push_back(std::move(art));
}

bool CapturedRuntime::record_graphs_again() {
  bool any = false;
  for (auto& cache : caches_)
    for (auto& fn : cache.fns)
      if (fn) any |= fn->record_graphs_again();
  return any;
}

std::vector<capture::RegionInfo> CapturedRuntime::regions() const {
  std::vector<capture::RegionInfo> out;
  for (size_t r = 0; r < partition_.regions.size(); ++r) {
    capture::RegionInfo info;
    info.index = static_cast<int>(r);
    for (const auto* n : partition_.regions[r].nodes) info.ops.push_back(n->kind().toQualString());
    for (const auto& e : caches_[r].entries) info.entries.push_back(e.info);
    info.limit_reached = caches_[r].limit_reached;
    if (!partition_.regions[r].nodes.empty()) {
      capture::SourceFiles s = sources_;
      info.first_loc = capture::node_origin(partition_.regions[r].nodes.front(), s).loc;
    }
    out.push_back(std::move(info));
  }
  return out;
}

}  // namespace kiln::runtime
