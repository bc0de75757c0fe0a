// The GPU benchmark's traced measurements (kiln_gpu_bench, bench/gpu_bench.cpp; CUDA builds of LibTorch only):
// device time per iteration and its longest activities from CUPTI, a call's host time by Kiln's span categories,
// and what CUPTI tracing (each way of recording the launching calls) and each part of `kiln profile`'s traced
// window add to a call, paired in one process as bench/gpu_bench_timing.h pairs two callables.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

namespace kiln::gpu_bench {

// Set to something: an empty value (VAR= in a script) counts as unset.
inline bool env_set(const char* name) {
  const char* v = std::getenv(name);
  return v && *v;
}

// One line on stderr saying what the benchmark does next (the log's last line names a step that crashed).
inline void step(const std::string& what) {
  std::fprintf(stderr, "  .. %s\n", what.c_str());
  std::fflush(stderr);
}

#if KILN_TORCH_CUDA
// Device time per iteration: kernels, copies and sets CUPTI recorded over `iters` calls. `kernels`, when given, gets
// the KILN_BENCH_TOP (default 25) device activities that took longest per iteration: {name: [count, ms]}, the rest
// summed as "(others)".
double device_ms(const std::function<void()>& fn, int iters = 20, nlohmann::json* kernels = nullptr);

// Where one call's host time goes, from Kiln's own spans over `iters` calls: per call, the whole call and each span
// category's exclusive time, so the parts add up to the call; "outside spans" is what no span covers.
nlohmann::json host_breakdown(const std::function<void()>& fn, int iters = 50);

// What CUPTI tracing adds to a call, paired (traced / untraced block medians less 1, median over rounds), per way of
// recording the launching calls; with `record_graphs_again` (a CUDA-graph mode's runtime) also graphs recorded whole.
nlohmann::json cupti_overhead(const std::function<void()>& fn, const std::function<bool()>& record_graphs_again = nullptr,
                              int rounds = 9, int per = 20);

// What each part of `kiln profile`'s traced window (host spans, op callbacks, memory samples, CUPTI, all) adds to a
// call, paired the same way.
nlohmann::json window_parts(const std::function<void()>& fn, int rounds = 9, int per = 20);
#endif

}  // namespace kiln::gpu_bench
