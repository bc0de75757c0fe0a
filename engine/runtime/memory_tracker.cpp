#include "engine/runtime/memory_tracker.h"

#include <c10/core/Allocator.h>
#include <c10/util/ThreadLocalDebugInfo.h>
#include <torch/version.h>

#include <mutex>

namespace kiln::runtime {

struct MemoryTracker::State {
  std::mutex mutex;
  std::map<std::string, int64_t> live, peak;
  bool samples = false;
  std::vector<MemorySample> kept;
};

namespace {

#if TORCH_VERSION_MAJOR >= 2
using Total = size_t;
#else
using Total = int64_t;
#endif

class Reporter : public c10::MemoryReportingInfoBase {
 public:
  explicit Reporter(std::shared_ptr<MemoryTracker::State> s) : s_(std::move(s)) {}
  bool memoryProfilingEnabled() const override { return true; }
  void reportMemoryUsage(void*, int64_t alloc_size, Total, Total, c10::Device device) override {
    const std::string d = device.str();
    std::lock_guard<std::mutex> lock(s_->mutex);
    int64_t& live = s_->live[d];
    live += alloc_size;  // negative for a free
    int64_t& peak = s_->peak[d];
    if (live > peak) peak = live;
    if (s_->samples) s_->kept.push_back({std::chrono::steady_clock::now(), d, live});
  }

 private:
  std::shared_ptr<MemoryTracker::State> s_;
};

}  // namespace

struct MemoryTrackerGuard {
  c10::DebugInfoGuard guard;
  explicit MemoryTrackerGuard(std::shared_ptr<MemoryTracker::State> s)
      : guard(c10::DebugInfoKind::PROFILER_STATE, std::make_shared<Reporter>(std::move(s))) {}
};

MemoryTracker::MemoryTracker() : state_(std::make_shared<State>()), guard_(std::make_unique<MemoryTrackerGuard>(state_)) {}

MemoryTracker::~MemoryTracker() = default;

int64_t MemoryTracker::peak_bytes(const std::string& device) const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  auto it = state_->peak.find(device);
  return it == state_->peak.end() ? 0 : it->second;
}

int64_t MemoryTracker::live_bytes(const std::string& device) const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  auto it = state_->live.find(device);
  return it == state_->live.end() ? 0 : it->second;
}

void MemoryTracker::keep_samples(bool on) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->samples = on;
}

std::vector<MemorySample> MemoryTracker::take_samples() {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return std::move(state_->kept);
}

void MemoryTracker::reset_peak() {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->peak = state_->live;
}

}  // namespace kiln::runtime
