// Wall-clock medians of whole calls on the host, for the CPU benchmarks (kiln_cpu_bench, kiln_host_bench).
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <vector>

namespace kiln::bench {

// The median of `iters` calls of fn, in milliseconds, after `warmup` calls not counted.
inline double median_call_ms(const std::function<void()>& fn, int iters, int warmup = 5) {
  for (int i = 0; i < warmup; ++i) fn();
  std::vector<double> t;
  t.reserve(static_cast<size_t>(std::max(iters, 1)));
  for (int i = 0; i < std::max(iters, 1); ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace kiln::bench
