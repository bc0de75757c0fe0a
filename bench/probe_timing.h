// Host time per call of a GPU operation, for the probes (kiln_extern_probe, kiln_product_probe): the calls queued
// behind a sleeping kernel (~0.1 s of device time ahead of them), so that the clock sees the host's work only, not
// the device's; µs per call, the median of 7 blocks of `iters`.
#pragma once

#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/Sleep.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <vector>

namespace kiln::bench {

inline double host_us(const std::function<void()>& fn, int iters) {
  fn();
  at::cuda::device_synchronize();
  std::vector<double> blocks;
  for (int b = 0; b < 7; ++b) {
    at::cuda::sleep(static_cast<int64_t>(2e8));
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) fn();
    auto t1 = std::chrono::steady_clock::now();
    blocks.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / iters);
    at::cuda::device_synchronize();
  }
  std::sort(blocks.begin(), blocks.end());
  return blocks[blocks.size() / 2];
}

}  // namespace kiln::bench
