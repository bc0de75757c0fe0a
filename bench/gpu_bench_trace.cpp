// The GPU benchmark's traced measurements (kiln_gpu_bench, bench/gpu_bench.cpp): device time per iteration from
// CUPTI, where a call's host time goes from Kiln's own spans, and what CUPTI tracing and each part of `kiln profile`'s
// traced window add to a call, paired in one process.
#include "bench/gpu_bench_trace.h"

#if KILN_TORCH_CUDA
#include <ATen/Context.h>
#include <c10/cuda/CUDAFunctions.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench/gpu_bench_timing.h"
#include "engine/base/error.h"
#include "engine/commands/profile_window.h"
#include "engine/profile/cuda/cupti_trace.h"
#include "engine/profile/host_trace.h"
#include "engine/runtime/cuda/cuda_graph_fn.h"
#include "engine/runtime/memory_tracker.h"

namespace kiln::gpu_bench {

using Clock = std::chrono::steady_clock;

// Device time per iteration: kernels, copies and sets CUPTI recorded over `iters` calls. `kernels`,
// when given, gets the KILN_BENCH_TOP (default 25) device activities that took longest per iteration:
// {name: [count, ms]}, the rest summed as "(others)".
double device_ms(const std::function<void()>& fn, int iters, json* kernels) {
  fn();
  c10::cuda::device_synchronize();
  profile::CuptiTrace trace(Clock::now());
  for (int i = 0; i < iters; ++i) fn();
  c10::cuda::device_synchronize();
  auto records = trace.stop();
  if (!records.error.empty()) throw Error("CUPTI: " + records.error);
  int64_t ns = 0;
  std::map<std::string, std::pair<int64_t, int64_t>> by_name;  // count, ns
  for (const auto& r : records.records)
    if (r.kind == profile::GpuActivityKind::Kernel || r.kind == profile::GpuActivityKind::Memcpy ||
        r.kind == profile::GpuActivityKind::Memset) {
      ns += r.end_ns - r.start_ns;
      auto& e = by_name[r.name];
      e.first += 1;
      e.second += r.end_ns - r.start_ns;
    }
  if (kernels) {
    std::vector<std::pair<std::string, std::pair<int64_t, int64_t>>> sorted(by_name.begin(), by_name.end());
    std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second.second > b.second.second; });
    *kernels = json::object();
    const char* top_env = std::getenv("KILN_BENCH_TOP");
    const size_t top = top_env && *top_env ? static_cast<size_t>(std::max(1, std::atoi(top_env))) : 25;
    for (size_t i = 0; i < sorted.size() && i < top; ++i)
      (*kernels)[sorted[i].first.substr(0, 160)] = {static_cast<double>(sorted[i].second.first) / iters,
                                                    sorted[i].second.second / 1e6 / iters};
    // Everything else in one entry, so the table's classes add up to the device time.
    int64_t rest_n = 0, rest_ns = 0;
    for (size_t i = top; i < sorted.size(); ++i) rest_n += sorted[i].second.first, rest_ns += sorted[i].second.second;
    if (rest_n) (*kernels)["(others)"] = {static_cast<double>(rest_n) / iters, rest_ns / 1e6 / iters};
  }
  return ns / 1e6 / iters;
}

// Where one call's host time goes, from Kiln's own spans over `iters` calls: per call, the whole
// call and each span category's exclusive time (a span's time less its nested spans'), so the parts
// add up to the call; "outside spans" is what no span covers (the interpreter between regions, the
// runtime's own bookkeeping).
json host_breakdown(const std::function<void()>& fn, int iters) {
  fn();
  c10::cuda::device_synchronize();
  profile::HostTrace trace;
  auto t0 = Clock::now();
  for (int i = 0; i < iters; ++i) fn();
  double total_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  c10::cuda::device_synchronize();
  const auto& spans = trace.spans();
  std::map<std::string, int64_t> exclusive;
  std::map<std::string, std::pair<int64_t, int64_t>> extern_by_target;  // calls, exclusive ns
  int64_t covered = 0;
  for (size_t i = 0; i < spans.size(); ++i) {
    int64_t child = 0;
    for (size_t j = i + 1; j < spans.size() && spans[j].start_ns < spans[i].start_ns + spans[i].dur_ns; ++j)
      if (spans[j].depth == spans[i].depth + 1 && spans[j].thread == spans[i].thread) child += spans[j].dur_ns;
    exclusive[spans[i].category] += spans[i].dur_ns - child;
    if (spans[i].category == "extern") {
      auto& e = extern_by_target[spans[i].name];
      e.first += 1;
      e.second += spans[i].dur_ns - child;
    }
    if (spans[i].depth == 0) covered += spans[i].dur_ns;
  }
  json out;
  out["call_ms"] = total_ms / iters;
  for (const auto& [category, ns] : exclusive) out[category + "_ms"] = ns / 1e6 / iters;
  out["outside spans_ms"] = std::max(0.0, total_ms / iters - covered / 1e6 / iters);
  // Extern dispatch by op: calls per call and host µs per extern call.
  for (const auto& [target, e] : extern_by_target)
    out["extern_by_target"][target] = {static_cast<double>(e.first) / iters, e.second / 1e3 / e.first};
  return out;
}

// What CUPTI tracing adds to a call, paired: `rounds` rounds, each an untraced block of `per` calls and a
// traced one (tracing started before the block, stopped and flushed after it, neither timed), the order
// alternating; the median over rounds of traced / untraced block medians, less 1. Per way of recording
// the launching calls (cupti_trace.h), and with device records only, so the note can say what each costs.
// With `record_graphs_again` (a CUDA-graph mode's runtime), also graphs recorded whole as `kiln profile`'s
// window does: the graphs recorded again under the trace and again after it, neither call timed.
json cupti_overhead(const std::function<void()>& fn, const std::function<bool()>& record_graphs_again, int rounds,
                    int per) {
  struct Variant {
    const char* name;
    profile::CuptiOptions options;
  };
  std::vector<Variant> variants;
  for (auto api : {profile::CuptiApiRecords::Activity, profile::CuptiApiRecords::Callbacks, profile::CuptiApiRecords::None}) {
    profile::CuptiOptions o;  // kiln profile's defaults otherwise: no synchronization records, no NVTX
    o.api = api;
    variants.push_back({api == profile::CuptiApiRecords::None ? "device records only" : profile::cupti_api_records_name(api), o});
  }
  profile::CuptiOptions syncs;
  syncs.api = profile::CuptiApiRecords::Activity;
  syncs.syncs = true;
  variants.push_back({"activity + synchronization records", syncs});
  // Graph launches as one record each (their kernel nodes unrecorded), kernels outside graphs recorded
  // (kiln profile's window in the CUDA-graph modes) or not.
  if (record_graphs_again) {
    profile::CuptiOptions o;
    o.graph_level = true;
    variants.push_back({"graphs whole + callbacks", o});
    o.kernel_records = false;
    variants.push_back({"graphs whole without kernel records", o});
  }
  // KILN_BENCH_CUPTI_WAYS="a,b" keeps the named ways only; KILN_BENCH_NO_CUPTI_WAYS kiln profile's own (callbacks).
  if (const char* keep = env_set("KILN_BENCH_NO_CUPTI_WAYS") ? "callbacks" : std::getenv("KILN_BENCH_CUPTI_WAYS"); keep && *keep) {
    std::string names = std::string(",") + keep + ",";
    variants.erase(std::remove_if(variants.begin(), variants.end(),
                                  [&](const Variant& v) { return names.find("," + std::string(v.name) + ",") == std::string::npos; }),
                   variants.end());
  }
  json out;
  for (const auto& v : variants) {
    step(std::string("CUPTI way: ") + v.name);
    std::vector<double> ratios;
    std::map<std::string, size_t> kinds;  // records of the last traced block, by kind
    std::string note;
    try {
      for (int r = 0; r < rounds; ++r) {
        // Graph-level records need every graph launched under them made under them: dropped before the
        // trace starts, recorded again under it; the same after it for the untraced block.
        const bool whole = v.options.graph_level && record_graphs_again;
        auto again = [&] {
          if (whole) {
            record_graphs_again();
            fn();
          }
          c10::cuda::device_synchronize();
        };
        auto traced = [&] {
          c10::cuda::device_synchronize();
          auto options = v.options;
          if (whole) record_graphs_again();
          if (runtime::live_cuda_graphs() > 0) options.graph_level = false;  // CUPTI would crash replaying them
          profile::CuptiTrace trace(Clock::now(), options);
          if (whole) fn();
          c10::cuda::device_synchronize();
          double ms = block_median_ms(fn, per);
          auto t = trace.stop();
          again();
          kinds.clear();
          for (const auto& rec : t.records) ++kinds[profile::gpu_activity_kind_name(rec.kind)];
          if (v.options.graph_level && !options.graph_level) note = "graphs left alive: kernels recorded instead";
          return ms;
        };
        double plain = 0, with = 0;
        if (r % 2 == 0) plain = block_median_ms(fn, per), with = traced();
        else with = traced(), plain = block_median_ms(fn, per);
        ratios.push_back(with / plain);
      }
    } catch (const std::exception& e) {
      out[v.name] = {{"error", std::string(e.what()).substr(0, 300)}};
      std::fprintf(stderr, "CUPTI way %s: %s\n", v.name, out[v.name].dump().c_str());
      continue;
    }
    json per_call;
    size_t records = 0;
    for (const auto& [kind, n] : kinds) per_call[kind] = static_cast<double>(n) / per, records += n;
    out[v.name] = {{"overhead", median(ratios) - 1}, {"records_per_call", static_cast<double>(records) / per}, {"by_kind", per_call}};
    if (!note.empty()) out[v.name]["note"] = note;
    std::fprintf(stderr, "CUPTI way %s: %s\n", v.name, out[v.name].dump().c_str());  // kept should a later way crash
  }
  return out;
}

// What each part of `kiln profile`'s traced window costs a call, paired as cupti_overhead is (rounds of an
// untraced block and a block with the part on, the order alternating; median of the ratios less 1): Kiln's
// host spans (a host trace alive), LibTorch's op callbacks (the window's OpSpanRecorder: an op span and a
// memory owner per op), the memory tracker's samples, CUPTI as the window records, and all of them together.
json window_parts(const std::function<void()>& fn, int rounds, int per) {
  enum Part { Spans = 1, Ops = 2, Memory = 4, Cupti = 8 };
  const std::vector<std::pair<const char*, int>> parts = {
      {"host spans", Spans}, {"op callbacks", Ops}, {"memory samples", Memory}, {"CUPTI", Cupti},
      {"all (the window)", Spans | Ops | Memory | Cupti}};
  json out;
  for (const auto& [name, mask] : parts) {
    step(std::string("window part: ") + name);
    std::vector<double> ratios;
    try {
      for (int r = 0; r < rounds; ++r) {
        auto with_part = [&, mask = mask] {
          c10::cuda::device_synchronize();
          std::unique_ptr<runtime::MemoryTracker> memory;
          if (mask & Memory) {
            memory = std::make_unique<runtime::MemoryTracker>();
            memory->keep_samples(true);
          }
          std::unique_ptr<profile::CuptiTrace> cupti;
          if (mask & Cupti) cupti = std::make_unique<profile::CuptiTrace>(Clock::now());
          std::vector<runtime::OpSpan> ops;
          std::optional<runtime::OpSpanRecorder> op_spans;  // the window's own op callbacks
          if (mask & Ops) op_spans.emplace(ops, Clock::now());
          std::optional<profile::HostTrace> spans;  // Kiln's spans are recorded while one is alive
          if (mask & Spans) spans.emplace();
          double ms = block_median_ms(fn, per);
          spans.reset();
          op_spans.reset();
          if (cupti) cupti->stop();
          if (memory) memory->keep_samples(false);
          return ms;
        };
        double plain = 0, with = 0;
        if (r % 2 == 0) plain = block_median_ms(fn, per), with = with_part();
        else with = with_part(), plain = block_median_ms(fn, per);
        ratios.push_back(with / plain);
      }
      out[name] = median(ratios) - 1;
    } catch (const std::exception& e) {
      out[name] = std::string("error: ") + std::string(e.what()).substr(0, 200);
    }
    std::fprintf(stderr, "window part %s: %s\n", name, out[name].dump().c_str());
  }
  return out;
}

}  // namespace kiln::gpu_bench
#endif
