#include "engine/commands/profile_model.h"
#include "kiln_build_config.h"

#if KILN_TORCH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#endif
#include <sys/utsname.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include "engine/backends/builtin.h"
#include "engine/base/error.h"
#include "engine/base/sha256.h"
#include "engine/commands/lost_fusion.h"
#include "engine/commands/profile_window.h"
#include "engine/capture/modes.h"
#include "engine/ir/print_text.h"
#include "engine/ir/to_dot.h"
#include "engine/ir/to_json.h"
#include "engine/model/model_impl.h"
#include "engine/profile/gpu_timeline.h"
#include "engine/report/break_costs.h"
#include "engine/profile/host_trace.h"
#include "engine/pipeline/stages.h"
#include "engine/runtime/captured_runtime.h"
#include "engine/runtime/compare_values.h"
#include "engine/runtime/cuda/cuda_graph_fn.h"
#include "engine/runtime/float_precision.h"
#include "engine/runtime/inference_guard.h"
#include "engine/runtime/memory_tracker.h"
#include "engine/runtime/example_inputs.h"
#include "engine/runtime/tuning_progress.h"
#include "engine/session/store.h"
#if KILN_WITH_CUDA
#include "engine/codegen/cuda/nvrtc_compiler.h"
#include "engine/profile/cuda/cupti_trace.h"
#include "engine/runtime/cuda/cuda_driver.h"
#endif
#include <nlohmann/json.hpp>

#include "engine/base/build_info.h"
#include "engine/base/json_text.h"
#include "engine/model/scoped_print_handler.h"

namespace kiln::runtime {

using Clock = std::chrono::steady_clock;

session::CompiledRegion session_region(int region, const capture::RegionEntry& e) {
  session::CompiledRegion cr;
  cr.compile_id = e.compile_id;
  cr.region = region;
  cr.recompile_reason = e.recompile_reason;
  cr.compile_ms = e.compile_ms;
  cr.hits = e.hits;
  cr.symbols = e.guards.symbols;
  for (const auto& g : e.guards.guards) cr.guards.push_back(g.text);
  cr.graphs.push_back({"captured", ir::to_readable(e.graph), ir::to_json(e.graph), ir::to_dot(e.graph)});
  return cr;
}

session::Environment current_environment() {
  session::Environment env;
  env.kiln_version = build_description();
  env.libtorch_version = compat::torch_version();
  struct utsname u;
  if (::uname(&u) == 0) env.os = std::string(u.sysname) + " " + u.release + " " + u.machine;
  std::ifstream cpu("/proc/cpuinfo");
  int cores = 0;
  for (std::string line; std::getline(cpu, line);) {
    if (line.rfind("model name", 0) == 0 && env.cpu.empty()) env.cpu = line.substr(line.find(':') + 2);
    if (line.rfind("processor", 0) == 0) ++cores;
  }
  if (cores) env.cpu += " (" + std::to_string(cores) + " logical cores)";
#if KILN_WITH_CUDA
  if (cuda::driver_available()) {
    env.gpu = cuda::device_name() + " (" + cuda::device_arch() + ")";
    env.driver = cuda::driver_version();
    env.cuda = "NVRTC " + codegen::nvrtc_version();
  }
#endif
  std::time_t now = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  env.created_at = buf;
  env.float32_precision = float32_precision_text();
  return env;
}

namespace {

session::LatencyStats stats(std::vector<double> ms) {
  session::LatencyStats s;
  if (ms.empty()) return s;
  std::sort(ms.begin(), ms.end());
  auto at = [&](double q) { return ms[std::min(ms.size() - 1, static_cast<size_t>(q * (ms.size() - 1) + 0.5))]; };
  s.median_ms = at(0.5);
  s.p10_ms = at(0.1);
  s.p90_ms = at(0.9);
  s.iterations = static_cast<int>(ms.size());
  return s;
}

thread_local Clock::time_point t_ops_origin;  // the host trace's zero, on the steady clock

// Traced iterations timed for what tracing costs (the first timeline_iters of them drawn; fewer when fewer
// untraced iterations were asked for).
constexpr int kTimedTracedIterations = 20;

struct Measured {
  session::Run run;
  std::vector<session::TimelineEvent> timeline;
};

struct MeasureSetup {
  int iters = 50;
  int timeline_iters = 10;
  bool gpu = false;                      // trace the device with CUPTI in the timeline window
  bool tf32 = false;                     // float32 results went through TF32 (the tolerance follows)
  MemoryTracker* memory = nullptr;       // started before the run's compile: the CPU's peak and the memory lane
  std::set<std::string> kiln_kernels;    // generated kernel names, for attributing device kernels
  // A CUDA-graph mode's runtime: drops its graphs so the next call records them again (false: it holds
  // none). Set, the traced window records graphs whole and detail iterations record kernels, unless
  // KILN_CUPTI_GRAPHS=nodes (start_window_trace).
  std::function<bool()> record_graphs_again;
};

#if KILN_TORCH_CUDA
void reset_peak_memory(bool gpu) {
  if (gpu) c10::cuda::CUDACachingAllocator::resetPeakStats(c10::cuda::current_device());
}
int64_t peak_memory(bool gpu, const MemoryTracker* memory) {
  if (!gpu) return memory ? memory->peak_bytes("cpu") : 0;
  auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(c10::cuda::current_device());
  return stats.allocated_bytes[0].peak;  // index 0: StatType::AGGREGATE (all pools)
}
#else
void reset_peak_memory(bool) {}
int64_t peak_memory(bool gpu, const MemoryTracker* memory) { return !gpu && memory ? memory->peak_bytes("cpu") : 0; }
#endif


// Times fn: first call, steady state, a traced window (host spans, LibTorch ops and, on a GPU,
// CUPTI device records). `reference` is eager's output, for the error columns.
Measured measure(const std::string& mode, const std::string& backend, const std::function<at::Tensor()>& fn,
                 const at::Tensor& reference, const MeasureSetup& setup) {
  Measured m;
  m.run.mode = mode;
  m.run.backend = backend;
  m.run.device = reference.device().str();
  reset_peak_memory(setup.gpu);
  auto t0 = Clock::now();
  at::Tensor out = fn();
  sync_device(out);
  m.run.first_call_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  for (int i = 0; i < 3; ++i) fn();
  // Peak memory of the steady state: what the first call needed only once (capture, compile,
  // tuning) does not count; what the run keeps between calls (graph pools, caches) does, as it
  // is still live.
  reset_peak_memory(setup.gpu);
  if (setup.memory) setup.memory->reset_peak();
  std::vector<double> times;
  for (int i = 0; i < setup.iters; ++i) {
    auto s = Clock::now();
    out = fn();
    sync_device(out);
    times.push_back(std::chrono::duration<double, std::milli>(Clock::now() - s).count());
  }
  m.run.latency = stats(times);
  m.run.peak_memory_bytes = peak_memory(setup.gpu, setup.memory);
  // The one error measure (runtime/compare_values.h).
  ValueError err = compare_to_eager(out, reference, setup.tf32);
  if (err.problem.empty()) {
    m.run.max_abs_error = err.max_abs;
    m.run.max_rel_error = err.max_rel;
  } else {
    m.run.status = "failed: output differs in shape from eager (" + err.problem + ")";
  }
  profile::HostTrace trace;
  std::vector<OpSpan> ops;
  t_ops_origin = Clock::now() - std::chrono::nanoseconds(trace.now_ns());
  profile::GpuTrace gpu_trace;
  bool graph_level = false;  // the window recorded CUDA graphs whole (start_window_trace)
#if KILN_WITH_CUDA
  std::unique_ptr<profile::CuptiTrace> cupti;
  if (setup.gpu) {
    try {
      // Kiln's spans are on the host lanes already; as NVTX ranges they cost a string and a record
      // each, so only when asked (KILN_CUPTI_MARKERS=1) or when another profiler injected NVTX.
      const bool nvtx = profile::default_cupti_options().markers || std::getenv("NVTX_INJECTION64_PATH");
      cupti = start_window_trace(t_ops_origin, setup.record_graphs_again, fn, graph_level);
      profile::HostTrace::set_nvtx(nvtx);
    } catch (const Error& e) {
      gpu_trace.error = e.what();
    }
  }
#endif
  if (setup.memory) {
    setup.memory->take_samples();
    setup.memory->keep_samples(true);
  }
  std::optional<OpSpanRecorder> op_spans(std::in_place, ops, t_ops_origin);
  std::vector<double> traced_times;
  const int64_t window_from = trace.now_ns();  // records before it are the graphs' recording call's
  // The drawn iterations, then more under the same tracing until kTimedTracedIterations were timed (what
  // tracing costs, from a median of three, moved by tens of percent between runs); only the drawn ones are kept.
  int64_t drawn_end = -1;
  const std::string device = m.run.device;
  PeakView drawn_peak;  // what was live at the drawn iterations' highest point
  auto end_drawn = [&] {
    drawn_end = trace.now_ns();
    if (setup.memory) drawn_peak = setup.memory->peak_live(device, 40);  // the largest 39, the rest summed
  };
  const int timed = std::max(setup.timeline_iters, std::min(kTimedTracedIterations, setup.iters));  // as many as asked for, at most 20
  for (int i = 0; i < timed; ++i) {
    if (i == setup.timeline_iters) end_drawn();
    auto s = Clock::now();
    {
      profile::Span it("iteration", "iteration " + std::to_string(i));
      out = fn();
    }
    sync_device(out);
    traced_times.push_back(std::chrono::duration<double, std::milli>(Clock::now() - s).count());
  }
  if (drawn_end < 0) end_drawn();
  auto drawn = [&](int64_t start_ns) { return start_ns >= window_from && start_ns < drawn_end; };
  op_spans.reset();
  if (setup.memory) {
    // The memory lane: bytes live (allocated since the run started) after each allocation and free.
    setup.memory->keep_samples(false);
    for (const auto& sample : setup.memory->take_samples(4000)) {  // a lane's shape, not every allocation
      if (std::chrono::duration_cast<std::chrono::nanoseconds>(sample.at - t_ops_origin).count() >= drawn_end) continue;
      session::TimelineEvent e;
      e.lane = "memory " + sample.device;
      e.name = "allocated";
      e.category = "memory";
      e.start_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(sample.at - t_ops_origin).count();
      e.args_json = "{\"bytes\": " + std::to_string(sample.live) + "}";
      m.timeline.push_back(std::move(e));
    }
    // What was live at the drawn iterations' highest point, per owner (report/memory_view.h reads it back).
    const PeakView& peak = drawn_peak;
    for (const auto& l : peak.live) {
      session::TimelineEvent e;
      e.lane = "memory " + device;
      e.name = l.owner;
      e.category = "memory peak";
      e.start_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(peak.at - t_ops_origin).count();
      e.args_json = "{\"bytes\": " + std::to_string(l.bytes) + "}";
      m.timeline.push_back(std::move(e));
    }
  }
  // Kernel detail (graph-level windows only): iterations recording every kernel, their graphs made untraced.
  profile::GpuTrace detail_trace;
  std::vector<double> detail_times;
  int64_t detail_from = -1;  // spans from here on are the detail iterations'
#if KILN_WITH_CUDA
  profile::HostTrace::set_nvtx(false);
  if (cupti) gpu_trace = cupti->stop();
  cupti.reset();
  // Not the call before the window (start_window_trace), nor the timed iterations after the drawn ones.
  profile::keep_records_between(gpu_trace.records, window_from, drawn_end);
  if (graph_level) {
    // As many as the window's: a report divides the window's host spans and the detail's kernels by one count.
    auto d = kernel_detail(t_ops_origin, setup.record_graphs_again, fn, setup.timeline_iters);
    detail_trace = std::move(d.trace);
    detail_times = std::move(d.times_ms);
    detail_from = d.from_ns;
  }
#endif
  int aten_ops = 0;  // top-level ops only: aten::linear counts once, not with the addmm inside it
  int64_t top_end = -1;
  for (const auto& o : ops) {
    if (o.end_ns < 0 || !drawn(o.start_ns)) continue;
    if (o.start_ns >= top_end) {
      ++aten_ops;
      top_end = o.end_ns;
    }
    session::TimelineEvent e;
    e.lane = "aten ops";
    e.name = o.name;
    e.category = "cpu_op";
    e.start_ns = o.start_ns;
    e.dur_ns = o.end_ns - o.start_ns;
    m.timeline.push_back(std::move(e));
  }
  int kernels = 0;
  double host_ns = 0;
  std::vector<profile::HostSpan> window, detail;  // the window's spans; the detail iterations'
  for (const auto& s : trace.spans()) {
    if (detail_from >= 0 && s.start_ns >= detail_from) {
      detail.push_back(s);  // attributes the detail's kernels (below)
      continue;
    }
    if (s.start_ns >= drawn_end) continue;  // timed, not drawn
    m.timeline.push_back(profile::timeline_event(s));
    window.push_back(s);
    if (s.category == "kernel" || s.category == "extern") ++kernels;
    if (s.category == "guard" || s.category == "interpreter") host_ns += static_cast<double>(s.dur_ns);
  }
  if (backend == "eager" || backend == "torchscript") kernels = aten_ops;  // each LibTorch op is a kernel there
  profile::GpuFigures figures, detail_figures;
  if (!gpu_trace.records.empty()) {
    auto events = profile::gpu_timeline(gpu_trace.records, window, setup.kiln_kernels, &figures);
    for (auto& e : events) m.timeline.push_back(std::move(e));
    kernels = figures.kernels;  // on a GPU, what the device ran
    m.run.gpu_busy = figures.busy_fraction;
    m.run.launch_gap_ms = figures.mean_gap_ms;
  }
  // The detail iterations are drawn right after the window (the graphs' recording between them traced nothing);
  // only the iterations' own spans are kept, so host costs stay the window's (theirs ran under per-kernel tracing).
  int64_t detail_moved_ns = 0;
  if (!detail.empty()) {
    int64_t window_end = 0;
    for (const auto& s : window) window_end = std::max(window_end, s.start_ns + s.dur_ns);
    for (const auto& r : gpu_trace.records) window_end = std::max(window_end, r.end_ns);
    detail_moved_ns = profile::move_next_to_window(window_end, 50000 /* 50 µs */, detail, detail_trace.records);
    for (const auto& s : detail)
      if (s.category == "detail") m.timeline.push_back(profile::timeline_event(s));
  }
  if (!detail_trace.records.empty()) {
    // Device records only, attributed here: the launching calls, like the detail's host spans, would count
    // twice in a report's host costs.
    auto events = profile::gpu_timeline(detail_trace.records, detail, setup.kiln_kernels, &detail_figures);
    for (auto& e : events)
      if (e.lane != "cuda api") m.timeline.push_back(std::move(e));
  }
  if (setup.timeline_iters > 0) {
    m.run.kernels_per_iter = static_cast<double>(kernels) / setup.timeline_iters;
    m.run.host_overhead_ms = host_ns / 1e6 / setup.timeline_iters;
  }
  // Graphs recorded whole: what the device ran per iteration is the detail iterations' count.
  if (graph_level && !detail_times.empty())
    m.run.kernels_per_iter = static_cast<double>(detail_figures.kernels) / static_cast<double>(detail_times.size());
  if (!traced_times.empty()) {
    // What tracing costs: the traced window's median iteration against the untraced one (on the CPU the
    // host spans, LibTorch op callbacks and memory samples; on a GPU CUPTI's records too).
    nlohmann::json args;
    double traced = stats(traced_times).median_ms;
    args["untraced_median_ms"] = m.run.latency.median_ms;
    args["traced_median_ms"] = traced;
    args["timed_iterations"] = traced_times.size();
    args["overhead"] = m.run.latency.median_ms > 0 ? traced / m.run.latency.median_ms - 1 : 0;
    if (setup.gpu) {  // CUPTI's records and the kernels they saw
      args["cupti_records"] = gpu_trace.records.size();
      args["dropped_records"] = gpu_trace.dropped;
      const auto& k = graph_level ? detail_figures : figures;  // kernel figures: from the iterations that record kernels
      args["device_kernels"] = k.kernels;
      args["attributed_kernels"] = k.attributed;
      args["graph_kernels"] = k.graph_kernels;
      args["cuda_graphs"] = graph_level ? "recorded whole in the window; kernels in the detail iterations" : "kernels recorded";
      if (graph_level) {
        args["graph_records"] = figures.graph_launches;
        double d = stats(detail_times).median_ms;
        args["kernel_detail"] = {{"iterations", detail_times.size()},
                                 {"traced_median_ms", d},
                                 {"overhead", m.run.latency.median_ms > 0 && d > 0 ? d / m.run.latency.median_ms - 1 : 0},
                                 {"cupti_records", detail_trace.records.size()},
                                 {"dropped_records", detail_trace.dropped},
                                 {"drawn_earlier_ns", detail_moved_ns}};
        args["dropped_records"] = gpu_trace.dropped + detail_trace.dropped;
        if (!detail_trace.error.empty()) args["kernel_detail"]["error"] = detail_trace.error;
      }
    }
    if (!gpu_trace.error.empty()) args["error"] = gpu_trace.error;
    session::TimelineEvent e;
    e.lane = "profiler";
    e.name = !setup.gpu ? "traced window" : gpu_trace.error.empty() ? "CUPTI trace" : "CUPTI trace failed";
    e.category = "profiler";
    // An instant at the start of the traced window (tracing itself starts earlier: CUPTI's set-up).
    e.start_ns = -1;
    for (const auto& t : m.timeline)
      if (e.start_ns < 0 || t.start_ns < e.start_ns) e.start_ns = t.start_ns;
    e.start_ns = std::max<int64_t>(e.start_ns, 0);
    e.args_json = safe_dump(args);
    m.timeline.push_back(std::move(e));
  }
  return m;
}

void add_capture_results(session::Session& s, const CapturedRuntime& rt) {
  const auto& part = rt.partition();
  for (size_t i = 0; i < part.breaks.size(); ++i) {
    session::GraphBreakRecord b;
    b.info = part.breaks[i];
    b.hits = rt.break_hits()[i];
    s.breaks.push_back(std::move(b));
  }
  for (const auto& info : rt.regions()) {
    const auto& arts = rt.artifacts(info.index);
    for (size_t k = 0; k < info.entries.size(); ++k) {
      const auto& e = info.entries[k];
      session::CompiledRegion cr = session_region(info.index, e);
      if (k < arts.size()) {
        for (const auto& st : arts[k].stages) {
          if (st.file == pipeline::kCaptured.dump_file) continue;
          std::string stage = pipeline::stage_of_dump(st.file);
          cr.graphs.push_back({stage, st.text, "", ""});
        }
        double total = 0;
        for (const auto& [name, ms] : arts[k].stage_ms) {
          cr.metrics["compile_" + name + "_ms"] = std::to_string(ms);
          total += ms;
        }
        cr.compile_ms += total;
        if (!arts[k].note.empty()) cr.metrics["note"] = arts[k].note;
        for (const auto& kern : arts[k].kernels) s.kernels.push_back(kern);
        for (const auto& d : arts[k].decisions) s.fusion.push_back(d);
      }
      s.regions.push_back(std::move(cr));
    }
  }
  s.events = rt.events();
}

}  // namespace

session::Session profile_model(const model::Model& cpu_model, const std::vector<InputSpec>& inputs,
                               const ProfileOptions& options, const std::string& out_path, const ProgressFn& progress) {
  backends::register_builtin_backends();
  std::string device = options.device;
  std::string no_gpu = model::cuda_unavailable_reason();
  if (device == "auto") device = no_gpu.empty() ? "cuda" : "cpu";
  if (device != "cpu" && !no_gpu.empty()) throw Error("--device " + device + ": " + no_gpu);
  model::Model model = device == "cpu" ? cpu_model : model::load_model(cpu_model.path(), device);
  auto names = model.forward_arg_names();
  if (names.size() != inputs.size())
    throw Error(model.path() + ": forward takes " + std::to_string(names.size()) + " input(s), " +
                std::to_string(inputs.size()) + " given");
  for (const auto& mode : options.modes)
    if (mode != "eager" && !capture::is_compile_mode(mode))
      throw Error("--modes: unknown mode '" + mode + "' (use eager, default, reduce-overhead, max-autotune)");
  session::Session s;
  s.origin = "kiln profile";
  s.env = current_environment();
  s.model.path = model.path();
  s.model.sha256 = sha256_file(model.path());
  for (const auto& in : inputs) s.model.inputs.push_back(in.str());
  s.model.parameter_count = model.parameter_count();
  for (const auto* n : model.impl->graph->nodes()) ++s.model.op_histogram[n->kind().toQualString()];

  model::ScopedPrintHandler quiet;
  InferenceGuard inference;  // every run, eager's too (inference_guard.h)
  auto x = make_inputs(inputs);
  if (device != "cpu")
    for (auto& t : x) t = t.to(torch::Device(device));

  std::vector<c10::IValue> args(x.begin(), x.end());
  auto& module = const_cast<torch::jit::Module&>(model.impl->module);

  std::vector<std::pair<std::string, std::string>> plan;  // (mode, backend)
  for (const auto& m : options.modes) plan.push_back({m, m == "eager" ? "eager" : "kiln"});
  // Eager first: every other run's speedup is measured against it.
  std::stable_partition(plan.begin(), plan.end(), [](const auto& p) { return p.first == "eager"; });
  for (const auto& b : options.backends) plan.push_back({"default", b});
  auto failed_row = [&](const std::string& mode, const std::string& backend, const std::string& why) {
    session::Run r;
    r.mode = mode;
    r.backend = backend;
    r.device = device == "cpu" ? "cpu" : device == "cuda" ? "cuda:0" : device;
    r.status = "failed: " + why;
    return r;
  };

  // A model that fails even eagerly still gets a session: the model, and one failed row per run.
  at::Tensor reference;
  try {
    reference = eager_forward(module, args, model.path(), inputs).toTensor();
  } catch (const Error& e) {
    session::SessionWriter writer(out_path, s);
    for (const auto& [mode, backend] : plan) {
      session::Run r = failed_row(mode, backend, mode == "eager" ? e.what() : "eager forward failed; nothing to compare with");
      r.id = writer.append_run(r, {});
      s.runs.push_back(r);
    }
    writer.close();
    return s;
  }

  // Everything but the runs goes into the header; the capture results come from the kiln backend.
  capture::CompileOptions co;
  co.backend = "kiln";
  std::ostringstream printed;
  auto t0 = Clock::now();
  CapturedRuntime kiln_rt(model, co);
  std::string capture_failure;  // the kiln backend's first call failed: every kiln run fails with it
  try {
    kiln_rt.run(x, &printed);
  } catch (const Error& e) {
    capture_failure = e.what();
  }
  double kiln_cold_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  add_capture_results(s, kiln_rt);
  session::SessionWriter writer(out_path, s);
  MeasureSetup setup;
  setup.iters = options.iters;
  setup.timeline_iters = options.timeline_iters;
  setup.gpu = device != "cpu";
  setup.tf32 = tf32_in_effect(model);
  for (const auto& k : s.kernels) setup.kiln_kernels.insert(k.name);
  // Lost fusion across each break, for the kiln backend's runs: the regions joined and put through
  // Kiln's scheduler, measured on the profiled inputs (commands/lost_fusion.h).
  std::vector<LostFusion> lost;
  if (!s.breaks.empty() && capture_failure.empty() &&
      std::any_of(plan.begin(), plan.end(), [](const auto& p) { return p.second == "kiln"; })) {
    if (progress) progress("lost fusion across the graph breaks", 0, static_cast<int>(plan.size()));
    try {
      lost = measure_lost_fusion(model, {inputs}, co, std::min(options.iters, 20));
    } catch (const std::exception& e) {
      std::string what = e.what();
      for (const auto& b : s.breaks) {
        LostFusion l;
        l.info = b.info;
        l.unmeasured = "the program failed to compile or run for the measurement: " + what.substr(0, what.find('\n'));
        lost.push_back(std::move(l));
      }
    }
  }
  int done = 0;
  double eager_ms = 0;
  for (const auto& [mode, backend] : plan) {
    if (progress) progress(mode + " / " + backend, done, static_cast<int>(plan.size()));
#if KILN_TORCH_CUDA
    // Each run pays for its own cuBLAS workspaces (32 MiB per stream on an H100): the ones an earlier
    // run made would otherwise count in every later run's peak. The earlier runs' runtimes (and CUDA
    // graphs) are gone by now.
    if (setup.gpu) {
      c10::cuda::device_synchronize();
      at::cuda::clearCublasWorkspaces();
    }
#endif
    // Started before the run's runtime is made: what it keeps between calls counts toward its peak.
    MemoryTracker memory;
    setup.memory = &memory;
    Measured m;
    try {
      if (device == "cpu" && (mode == "reduce-overhead" || mode == "max-autotune" || backend == "cudagraphs")) {
        m.run.mode = mode;
        m.run.backend = backend;
        m.run.device = "cpu";
        m.run.status = "skipped: needs an NVIDIA GPU (" + (no_gpu.empty() ? std::string("profiling on cpu") : no_gpu) + ")";
      } else if (mode == "eager") {
        m = measure(mode, backend, [&] { return eager_call(module, args).toTensor(); }, reference, setup);
        eager_ms = m.run.latency.median_ms;
      } else if (auto peer = runtime::make_backend(backend); peer->whole_model()) {
        // A peer that compiles the module itself (torchscript): its compiler's time, then its calls.
        std::unique_ptr<runtime::CompiledModel> compiled;
        {
          MemoryOwner owner("the peer's compiled module (its frozen weights and constants)");
          compiled = peer->compile_model(model, device);
        }
        if (!compiled) throw Error("backend '" + backend + "' compiled nothing");
        m = measure(mode, backend, [&] { return compiled->forward(args).toTensor(); }, reference, setup);
        m.run.compile_cold_ms = compiled->compile_ms;
      } else {
        capture::CompileOptions o;
        o.backend = backend;
        o.mode = mode;
        // max-autotune times its candidates during the first call: say which kernel, how far.
        ScopedTuningProgress tuning([&](const std::string& kernel, int tried, int candidates) {
          if (progress)
            progress(mode + " / " + backend + ": tuning " + kernel + " (" + std::to_string(tried) + "/" +
                         std::to_string(candidates) + " candidates)",
                     done, static_cast<int>(plan.size()));
        });
        if (backend == "kiln" && !capture_failure.empty()) throw Error(capture_failure);
        auto tw = Clock::now();
        CapturedRuntime rt(model, o);
        rt.run(x, &printed);
        double warm = std::chrono::duration<double, std::milli>(Clock::now() - tw).count();
        MeasureSetup run_setup = setup;
        // The modes that replay CUDA graphs (recorded from their second call on): the window may record them
        // whole (start_window_trace).
        if (setup.gpu && (mode == "reduce-overhead" || mode == "max-autotune" || backend == "cudagraphs"))
          run_setup.record_graphs_again = [&rt] { return rt.record_graphs_again(); };
        m = measure(mode, backend, [&] { return rt.run(x, &printed).at(0).toTensor(); }, reference, run_setup);
        m.run.compile_cold_ms = backend == "kiln" ? kiln_cold_ms : warm;
        m.run.compile_warm_ms = warm;
        // A region whose compilation failed, or whose compiled code failed on a later call, ran eagerly: the numbers are
        // eager's, not this mode's.
        for (const auto& ev : rt.events())
          if (ev.kind == capture::Event::Kind::EagerFallback && m.run.status == "ok" &&
              ev.message.find(runtime::kFailedRunsEagerly) != std::string::npos)
            m.run.status = "failed: region " + std::to_string(ev.region) + " " + ev.compile_id + ": " + ev.message;
        // max-autotune tuned its kernels on the first call: keep every candidate with the kernel.
        for (const auto& info : rt.regions())
          for (const auto& art : rt.artifacts(info.index))
            for (const auto& k : art.kernels) {
              if (k.autotune.empty()) continue;
              if (!writer.record_autotune(k.name, k.compile_id, k.autotune)) {
                writer.append_kernels({k});  // only this mode has it (a GEMM it raced against cuBLAS)
                s.kernels.push_back(k);
                continue;
              }
              for (auto& stored : s.kernels)
                if (stored.name == k.name && stored.compile_id == k.compile_id) {
                  stored.autotune = k.autotune;
                  break;
                }
            }
      }
    } catch (const Error& e) {
      // Failures are data: the run is a row with the error (node and line where known), the others go on.
      m = Measured{};
      m.run = failed_row(mode, backend, e.what());
    } catch (const c10::Error& e) {
      m = Measured{};
      std::string what = e.what_without_backtrace();
      m.run = failed_row(mode, backend, what.substr(0, what.find('\n')));
    }
    if (m.run.status == "ok" && eager_ms > 0 && m.run.latency.median_ms > 0)
      m.run.speedup_vs_eager = eager_ms / m.run.latency.median_ms;
    m.run.id = writer.append_run(m.run, m.timeline);
    s.runs.push_back(m.run);
    for (auto& e : m.timeline) {
      e.run = m.run.id;
      s.timeline.push_back(e);
    }
    // What each graph break cost in this run, from its traced iterations (report/break_costs.h).
    if (m.run.status == "ok") {
      auto costs = report::measure_break_costs(s.breaks, m.timeline, m.run.id);
      if (backend == "kiln") apply_lost_fusion(costs, lost);
      if (!costs.empty()) {
        writer.append_break_costs(costs);
        s.break_costs.insert(s.break_costs.end(), costs.begin(), costs.end());
      }
    }
    ++done;
  }
  if (progress) progress("done", done, static_cast<int>(plan.size()));
  writer.close();
  return s;
}

}  // namespace kiln::runtime
