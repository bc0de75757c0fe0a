// What kiln profile's memory tracking costs LibTorch per allocation (runtime/memory_tracker.h): small CPU
// tensors made and freed under a Kiln owner (as a region's buffers are), with no tracker, with the tracker
// booking blocks to owners, and inside its window (samples kept, the peak's live set followed), the three
// alternated in blocks in one run. With `live` blocks held (as a model's weights and buffers are) before the
// window starts, and allocations spread over OWNERS owners in turn (a region's computations each own their
// buffers: mobilenet_v3_small's default region has about 110). Prints ns per allocation and free. Not a test:
// nothing asserts speed.
//
//   kiln_memory_bench [LIVE_BLOCKS] [ROUNDS] [OWNERS]
#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "engine/runtime/memory_tracker.h"

using namespace kiln;

namespace {

constexpr int kPairs = 20000;  // allocations and frees per block

std::vector<std::string> g_owners;

double ns_per_pair(const std::function<void()>& before, const std::function<void()>& after) {
  std::vector<at::Tensor> held(8);
  before();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kPairs; ++i) {
    runtime::MemoryOwner owner("buffer", &g_owners[static_cast<size_t>(i) % g_owners.size()]);
    held[static_cast<size_t>(i) % held.size()] = at::empty({64 + (i % 8) * 16}, at::kFloat);
  }
  const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
  after();
  return ns / kPairs;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int live = argc > 1 ? std::atoi(argv[1]) : 300;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 9;
  const int owners = std::max(1, argc > 3 ? std::atoi(argv[3]) : 110);
  for (int i = 0; i < owners; ++i) g_owners.push_back("conv2d_" + std::to_string(i));
  std::vector<double> none, booking, window;
  for (int r = 0; r < rounds; ++r) {
    none.push_back(ns_per_pair([] {}, [] {}));
    {
      runtime::MemoryTracker tracker;
      std::vector<at::Tensor> weights;
      static const std::string weight = "weight";
      for (int i = 0; i < live; ++i) {
        runtime::MemoryOwner owner("layout copy of", &weight);
        weights.push_back(at::empty({32}, at::kFloat));
      }
      booking.push_back(ns_per_pair([] {}, [] {}));
      window.push_back(ns_per_pair([&] { tracker.keep_samples(true); },
                                   [&] {
                                     tracker.keep_samples(false);
                                     tracker.take_samples(4000);
                                   }));
    }
  }
  std::printf("ns per allocation and free (%d live blocks, %d owners, median of %d rounds of %d)\n", live, owners,
              rounds, kPairs);
  std::printf("| no tracker | booking to owners | in the window (samples, peak) |\n|--:|--:|--:|\n");
  std::printf("| %.0f | %.0f | %.0f |\n", median(none), median(booking), median(window));
  return 0;
}
