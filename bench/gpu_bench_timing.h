// The GPU benchmark's timing (kiln_gpu_bench, bench/gpu_bench.cpp): per-call medians by CUDA events, paired
// comparisons of two callables in one process, and steady-state peak device memory.
#pragma once

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <functional>
#include <vector>

#include "engine/runtime/cuda/cuda_driver.h"

namespace kiln::gpu_bench {

using nlohmann::json;

// Steady-state peak device memory, as `kiln profile` measures it: the caching allocator's peak over
// calls after the warm-up, so what the run keeps between calls (weights, layout copies, graph pools,
// workspaces) counts and what only the first call needed does not. Each measured side first gives
// back the cuBLAS workspaces an earlier side made.
inline void fresh_workspaces() {
  c10::cuda::device_synchronize();
  at::cuda::clearCublasWorkspaces();
}
inline double peak_mib(const std::function<void()>& fn) {
  for (int i = 0; i < 3; ++i) fn();
  c10::cuda::device_synchronize();
  c10::cuda::CUDACachingAllocator::resetPeakStats(c10::cuda::current_device());
  for (int i = 0; i < 5; ++i) fn();
  c10::cuda::device_synchronize();
  auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(c10::cuda::current_device());
  return static_cast<double>(stats.allocated_bytes[0].peak) / (1024.0 * 1024.0);  // index 0: all pools
}

// Per-call time: CUDA events around one synchronized call, after 10 warm-up calls, in three blocks of
// `iters`; the median of the block medians (the peers do the same). `spread` gets the largest block
// median over the smallest minus 1: a difference under it is noise.
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The median of `calls` calls, each timed by CUDA events around it.
inline double block_median_ms(const std::function<void()>& fn, int calls) {
  auto stream = static_cast<cuda::Stream>(at::cuda::getCurrentCUDAStream().stream());
  std::vector<double> t;
  for (int i = 0; i < calls; ++i) {
    cuda::EventTimer timer(stream);
    timer.start();
    fn();
    t.push_back(timer.stop_ms());
  }
  return median(std::move(t));
}

inline double steady_ms(const std::function<void()>& fn, int iters = 100, double* spread = nullptr) {
  for (int i = 0; i < 10; ++i) fn();
  c10::cuda::device_synchronize();
  std::vector<double> blocks;
  for (int b = 0; b < 3; ++b) blocks.push_back(block_median_ms(fn, iters));
  std::sort(blocks.begin(), blocks.end());
  if (spread) *spread = blocks.back() / blocks.front() - 1;
  return blocks[1];
}

// Eager against a Kiln mode, paired: `rounds` rounds, each timing a block of `per` calls of each side
// (the order alternating between rounds; per-call CUDA events, the block's median), so drift of the
// machine's host between measurements reaches both sides alike. Returns the median over rounds of
// eager's median / Kiln's median (above 1: Kiln faster) and both sides' medians of their block medians.
inline json paired_with_eager(const std::function<void()>& eager, const std::function<void()>& kiln, int rounds = 15,
                       int per = 20) {
  auto block = [&](const std::function<void()>& fn) { return block_median_ms(fn, per); };
  for (int i = 0; i < 5; ++i) eager(), kiln();
  c10::cuda::device_synchronize();
  std::vector<double> ratios, e_ms, k_ms;
  for (int r = 0; r < rounds; ++r) {
    double e = 0, k = 0;
    if (r % 2 == 0) e = block(eager), k = block(kiln);
    else k = block(kiln), e = block(eager);
    ratios.push_back(e / k);
    e_ms.push_back(e);
    k_ms.push_back(k);
  }
  return {{"speedup", median(ratios)}, {"eager_ms", median(e_ms)}, {"kiln_ms", median(k_ms)},
          {"rounds", rounds}, {"calls_per_block", per}};
}

}  // namespace kiln::gpu_bench
