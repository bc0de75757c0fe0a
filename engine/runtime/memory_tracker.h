// Bytes LibTorch allocates while a tracker is alive on this thread, on every device, through the
// allocators' own reports (the channel PyTorch's profiler reads with profile_memory=True): the CPU
// allocator and the CUDA caching allocator report each allocation and free.
//
// MemoryTracker tracker;  ... run ...  tracker.peak_bytes(device)
//   post: peak_bytes = the most bytes allocated since the tracker started and not yet freed (memory
//         allocated before it, such as weights, is not counted); samples (when asked for) hold the
//         bytes live after every allocation and free, with a steady-clock time, for a memory lane.
//   Thread-local: allocations of other threads are not seen (Kiln's own kernels allocate nothing).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/base/non_copyable.h"

namespace kiln::runtime {

struct MemorySample {
  std::chrono::steady_clock::time_point at;
  std::string device;  // "cpu", "cuda:0"
  int64_t live = 0;    // bytes allocated since the tracker started, still live
};

class MemoryTracker : NonCopyable {
 public:
  MemoryTracker();
  ~MemoryTracker();

  int64_t peak_bytes(const std::string& device) const;
  int64_t live_bytes(const std::string& device) const;
  void keep_samples(bool on);
  std::vector<MemorySample> take_samples();
  void reset_peak();  // the peak starts again from what is live now

  struct State;

 private:
  std::shared_ptr<State> state_;
  std::unique_ptr<struct MemoryTrackerGuard> guard_;
};

}  // namespace kiln::runtime
