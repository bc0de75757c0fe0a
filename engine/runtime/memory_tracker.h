// Bytes LibTorch allocates while a tracker is alive on this thread, on every device, through the
// allocators' own reports (the channel PyTorch's profiler reads with profile_memory=True): the CPU
// allocator and the CUDA caching allocator report each allocation and free.
//
// MemoryTracker tracker;  ... run ...  tracker.peak_bytes(device)
//   post: peak_bytes = the most bytes allocated since the tracker started and not yet freed (memory
//         allocated before it, such as weights, is not counted); samples (when asked for) hold the
//         bytes live after every allocation and free, with a steady-clock time, for a memory lane.
//   Thread-local: allocations of other threads are not seen (Kiln's own kernels allocate nothing).
//
// Owners: every allocation while the tracker lives is booked to the outermost MemoryOwner alive on
// the thread (a Kiln buffer and the graph node it holds, an extern's node, a weight's layout copy,
// a CUDA graph's pool, eager's top-level op); peak_live(device) is what was live at the highest
// point of the last window (samples kept), summed per owner. Memory allocated before the tracker
// (the weights) is not counted; frees of it show as one negative entry.
#pragma once

#include <chrono>
#include <cstddef>
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

// Names the owner of the allocations made while it lives: `kind` + `name` ("buffer " + a graph node's
// name). Both must outlive the scope; nothing is copied unless an allocation is booked.
class MemoryOwner : NonCopyable {
 public:
  MemoryOwner(const char* kind, const std::string* name = nullptr);
  ~MemoryOwner();
};
// The same for callbacks that cannot hold a scope (op start and end): push and pop in pairs.
void push_memory_owner(const char* kind, const std::string* name = nullptr);
void pop_memory_owner();
// The block at ptr, allocated earlier, now holds another value (a memory-plan slot handed over, a
// result written in place): later peaks book it to that owner. No tracker window open: nothing.
void relabel_memory(const void* ptr, const char* kind, const std::string* name);

struct LiveBytes {
  std::string owner;
  int64_t bytes = 0;
};

// What was live at a window's peak: the time and bytes of the peak, and the bytes per owner
// (largest first; they sum to `bytes`).
struct PeakView {
  std::chrono::steady_clock::time_point at;
  int64_t bytes = 0;
  std::vector<LiveBytes> live;
};

inline const char* const kFreedFromBefore = "freed, allocated before the run";

class MemoryTracker : NonCopyable {
 public:
  MemoryTracker();
  ~MemoryTracker();

  int64_t peak_bytes(const std::string& device) const;
  int64_t live_bytes(const std::string& device) const;
  // on: a new window starts (samples, owners and its peak); off: it ends.
  void keep_samples(bool on);
  // The samples kept so far, in time order. Beyond `at_most` per device, each stretch of a device's
  // consecutive samples keeps its lowest and highest, so the lane keeps its shape and its peak.
  std::vector<MemorySample> take_samples(size_t at_most = SIZE_MAX);
  // The peak of the last window on `device` (bytes 0 when nothing was allocated there); beyond
  // `max_owners`, the smallest owners are summed into one "N other owners" entry.
  PeakView peak_live(const std::string& device, size_t max_owners = SIZE_MAX) const;
  void reset_peak();  // the peak starts again from what is live now

  struct State;

 private:
  std::shared_ptr<State> state_;
  std::unique_ptr<struct MemoryTrackerGuard> guard_;
};

}  // namespace kiln::runtime
