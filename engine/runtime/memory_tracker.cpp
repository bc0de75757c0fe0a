#include "engine/runtime/memory_tracker.h"

#include <c10/core/Allocator.h>
#include <c10/util/ThreadLocalDebugInfo.h>
#include <torch/version.h>

#include <algorithm>
#include <mutex>
#include <unordered_map>

namespace kiln::runtime {

struct MemoryTracker::State {
  std::mutex mutex;
  std::map<std::string, int64_t> live, peak;
  bool samples = false;
  std::vector<MemorySample> kept;
  // The window (while samples are kept): each block allocated in it with its owner; per device,
  // what was live before it and not freed since, and the highest point with its live set.
  struct Block {
    std::string device;
    int64_t bytes = 0;
    std::string owner;
  };
  std::unordered_map<void*, Block> blocks;
  std::map<std::string, int64_t> before;  // frees of blocks allocated before the tracker (negative)
  std::map<std::string, PeakView> window_peak;

  std::vector<LiveBytes> live_set(const std::string& device) const {
    std::map<std::string, int64_t> by_owner;
    for (const auto& [ptr, b] : blocks)
      if (b.device == device) by_owner[b.owner] += b.bytes;
    auto it = before.find(device);
    if (it != before.end() && it->second != 0) by_owner[kFreedFromBefore] += it->second;
    std::vector<LiveBytes> out;
    for (auto& [owner, bytes] : by_owner) out.push_back({owner, bytes});
    std::stable_sort(out.begin(), out.end(), [](const LiveBytes& a, const LiveBytes& b) { return a.bytes > b.bytes; });
    return out;
  }
};

namespace {

struct OwnerEntry {
  const char* kind;
  const std::string* name;
};
thread_local std::vector<OwnerEntry> t_owners;

std::string current_owner() {
  if (t_owners.empty()) return "outside any op (inputs, the model's outputs kept between calls)";
  const auto& o = t_owners.front();  // the outermost: a top-level op, a Kiln buffer or extern
  return o.name ? std::string(o.kind) + " " + *o.name : std::string(o.kind);
}

#if TORCH_VERSION_MAJOR >= 2
using Total = size_t;
#else
using Total = int64_t;
#endif

class Reporter : public c10::MemoryReportingInfoBase {
 public:
  explicit Reporter(std::shared_ptr<MemoryTracker::State> s) : s_(std::move(s)) {}
  bool memoryProfilingEnabled() const override { return true; }
  // A block reused for another value (a memory-plan slot, an in-place result) now belongs to it.
  void relabel(const void* ptr, std::string owner) {
    std::lock_guard<std::mutex> lock(s_->mutex);
    auto it = s_->blocks.find(const_cast<void*>(ptr));
    if (it != s_->blocks.end()) it->second.owner = std::move(owner);
  }
  void reportMemoryUsage(void* ptr, int64_t alloc_size, Total, Total, c10::Device device) override {
    const std::string d = device.str();
    std::lock_guard<std::mutex> lock(s_->mutex);
    int64_t& live = s_->live[d];
    live += alloc_size;  // negative for a free
    int64_t& peak = s_->peak[d];
    if (live > peak) peak = live;
    // Every block allocated while the tracker lives is booked to its owner; a free of a block from
    // before the tracker (untracked) is counted apart.
    if (alloc_size > 0) {
      s_->blocks[ptr] = {d, alloc_size, current_owner()};
    } else {
      auto it = s_->blocks.find(ptr);
      if (it != s_->blocks.end()) s_->blocks.erase(it);
      else s_->before[d] += alloc_size;
    }
    if (!s_->samples) return;
    const auto now = std::chrono::steady_clock::now();
    s_->kept.push_back({now, d, live});
    PeakView& wp = s_->window_peak[d];
    if (live > wp.bytes) {
      wp.at = now;
      wp.bytes = live;
      wp.live = s_->live_set(d);
    }
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
  if (on && !state_->samples) {
    state_->window_peak.clear();
    for (const auto& [d, bytes] : state_->live) {
      PeakView& wp = state_->window_peak[d];
      wp.at = std::chrono::steady_clock::now();
      wp.bytes = bytes;
      wp.live = state_->live_set(d);
    }
  }
  state_->samples = on;
}

PeakView MemoryTracker::peak_live(const std::string& device, size_t max_owners) const {
  PeakView peak;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    auto it = state_->window_peak.find(device);
    if (it != state_->window_peak.end()) peak = it->second;
  }
  if (max_owners >= 1 && peak.live.size() > max_owners) {
    LiveBytes rest{std::to_string(peak.live.size() - max_owners + 1) + " other owners", 0};
    for (size_t i = max_owners - 1; i < peak.live.size(); ++i) rest.bytes += peak.live[i].bytes;
    peak.live.resize(max_owners - 1);
    peak.live.push_back(std::move(rest));
  }
  return peak;
}

void relabel_memory(const void* ptr, const char* kind, const std::string* name) {
  auto* reporter = dynamic_cast<Reporter*>(c10::ThreadLocalDebugInfo::get(c10::DebugInfoKind::PROFILER_STATE));
  if (reporter && ptr) reporter->relabel(ptr, name ? std::string(kind) + " " + *name : std::string(kind));
}

MemoryOwner::MemoryOwner(const char* kind, const std::string* name) { t_owners.push_back({kind, name}); }
MemoryOwner::~MemoryOwner() { t_owners.pop_back(); }
void push_memory_owner(const char* kind, const std::string* name) { t_owners.push_back({kind, name}); }
void pop_memory_owner() {
  if (!t_owners.empty()) t_owners.pop_back();
}

std::vector<MemorySample> MemoryTracker::take_samples(size_t at_most) {
  std::vector<MemorySample> all;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    all = std::move(state_->kept);
    state_->kept.clear();
  }
  std::map<std::string, std::vector<size_t>> by_device;  // indices, in time order
  for (size_t i = 0; i < all.size(); ++i) by_device[all[i].device].push_back(i);
  std::vector<size_t> keep;
  for (const auto& [device, idx] : by_device) {
    if (idx.size() <= at_most || at_most < 2) {
      keep.insert(keep.end(), idx.begin(), idx.end());
      continue;
    }
    const size_t stretch = (idx.size() + at_most / 2 - 1) / (at_most / 2);
    for (size_t b = 0; b < idx.size(); b += stretch) {
      size_t lo = idx[b], hi = idx[b];
      for (size_t j = b; j < std::min(idx.size(), b + stretch); ++j) {
        if (all[idx[j]].live < all[lo].live) lo = idx[j];
        if (all[idx[j]].live > all[hi].live) hi = idx[j];
      }
      keep.push_back(std::min(lo, hi));
      if (lo != hi) keep.push_back(std::max(lo, hi));
    }
  }
  std::sort(keep.begin(), keep.end());
  std::vector<MemorySample> out;
  out.reserve(keep.size());
  for (size_t i : keep) out.push_back(all[i]);
  return out;
}

void MemoryTracker::reset_peak() {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->peak = state_->live;
}

}  // namespace kiln::runtime
