#include "engine/runtime/memory_tracker.h"

#include <c10/core/Allocator.h>
#include <c10/util/ThreadLocalDebugInfo.h>
#include <torch/version.h>

#include <algorithm>
#include <functional>
#include <mutex>
#include <unordered_map>
#include <utility>

namespace kiln::runtime {

namespace {

struct OwnerEntry {
  const char* kind;
  const std::string* name;
};
thread_local std::vector<OwnerEntry> t_owners;

constexpr const char* kOutside = "outside any op (inputs, the model's outputs kept between calls)";

}  // namespace

// Per allocation (the hot path: every LibTorch allocation and free while a tracker lives) the owner is a
// number, found without building its name (a cache by the owner's pointers, checked against their text),
// and each device keeps its live bytes per owner, so a window's new peak copies one small table instead of
// walking every live block.
struct MemoryTracker::State {
  std::mutex mutex;
  struct Device {
    std::string name;  // "cpu", "cuda:0"
    c10::DeviceType type = c10::DeviceType::CPU;
    c10::DeviceIndex index = -1;
    int64_t live = 0, peak = 0;
    int64_t before = 0;             // frees of blocks allocated before the tracker (negative)
    std::vector<int64_t> by_owner;  // live bytes per owner id (blocks allocated while the tracker lives)
    bool windowed = false;          // window_peak set in this window
    PeakView window_peak;
  };
  std::vector<Device> devices;  // a few
  std::vector<std::string> owner_names;
  std::unordered_map<std::string, uint32_t> owner_ids;
  // The owner cache, by the owner's pointers (a kind literal, a computation's name kept by its region): a region
  // has an owner per computation, so a hash of them rather than a short list. A pointer may outlive what it
  // pointed to and be reused, so a hit is checked against the text it was made from.
  struct Cached {
    std::string kind_text, name_text;
    uint32_t id;
  };
  struct PointerPairHash {
    size_t operator()(const std::pair<const void*, const void*>& p) const {
      return std::hash<const void*>()(p.first) * 31 + std::hash<const void*>()(p.second);
    }
  };
  std::unordered_map<std::pair<const void*, const void*>, Cached, PointerPairHash> cache;
  bool samples = false;
  struct Kept {  // a sample as the hot path keeps it: the device by number
    std::chrono::steady_clock::time_point at;
    uint32_t device;
    int64_t live;
  };
  std::vector<Kept> kept;
  struct Block {
    uint32_t device;
    uint32_t owner;
    int64_t bytes;
  };
  std::unordered_map<void*, Block> blocks;

  uint32_t device_of(const c10::Device& d) {
    for (size_t i = 0; i < devices.size(); ++i)
      if (devices[i].type == d.type() && devices[i].index == d.index()) return static_cast<uint32_t>(i);
    Device fresh;
    fresh.name = d.str();
    fresh.type = d.type();
    fresh.index = d.index();
    devices.push_back(std::move(fresh));
    return static_cast<uint32_t>(devices.size() - 1);
  }
  const Device* find(const std::string& name) const {
    for (const auto& d : devices)
      if (d.name == name) return &d;
    return nullptr;
  }
  uint32_t intern(std::string text) {
    auto it = owner_ids.find(text);
    if (it != owner_ids.end()) return it->second;
    const auto id = static_cast<uint32_t>(owner_names.size());
    owner_ids.emplace(text, id);
    owner_names.push_back(std::move(text));
    return id;
  }
  uint32_t owner_of(const char* kind, const std::string* name) {
    const char* kind_text = kind ? kind : "";
    auto it = cache.find({kind, name});
    if (it != cache.end() && it->second.kind_text == kind_text && (!name || it->second.name_text == *name))
      return it->second.id;
    const uint32_t id = intern(!kind ? std::string(kOutside) : name ? std::string(kind) + " " + *name : std::string(kind));
    if (cache.size() >= 4096) cache.clear();  // bounded: names of regions long gone
    cache[{kind, name}] = Cached{kind_text, name ? *name : "", id};
    return id;
  }
  uint32_t current_owner() {
    if (t_owners.empty()) return owner_of(nullptr, nullptr);
    const auto& o = t_owners.front();  // the outermost: a top-level op, a Kiln buffer or extern
    return owner_of(o.kind, o.name);
  }
  void book(Device& d, uint32_t owner, int64_t bytes) {
    if (d.by_owner.size() <= owner) d.by_owner.resize(owner + 1, 0);
    d.by_owner[owner] += bytes;
  }

  // Largest first; equal bytes by owner name.
  std::vector<LiveBytes> live_set(const Device& d) const {
    std::vector<LiveBytes> out;
    for (size_t o = 0; o < d.by_owner.size(); ++o)
      if (d.by_owner[o] != 0) out.push_back({owner_names[o], d.by_owner[o]});
    if (d.before != 0) out.push_back({kFreedFromBefore, d.before});
    std::sort(out.begin(), out.end(), [](const LiveBytes& a, const LiveBytes& b) {
      return a.bytes != b.bytes ? a.bytes > b.bytes : a.owner < b.owner;
    });
    return out;
  }
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
  // A block reused for another value (a memory-plan slot, an in-place result) now belongs to it.
  void relabel(const void* ptr, const char* kind, const std::string* name) {
    std::lock_guard<std::mutex> lock(s_->mutex);
    auto it = s_->blocks.find(const_cast<void*>(ptr));
    if (it == s_->blocks.end()) return;
    auto& b = it->second;
    auto& d = s_->devices[b.device];
    const uint32_t owner = s_->owner_of(kind, name);
    s_->book(d, b.owner, -b.bytes);
    s_->book(d, owner, b.bytes);
    b.owner = owner;
  }
  void reportMemoryUsage(void* ptr, int64_t alloc_size, Total, Total, c10::Device device) override {
    std::lock_guard<std::mutex> lock(s_->mutex);
    const uint32_t di = s_->device_of(device);
    auto& d = s_->devices[di];
    d.live += alloc_size;  // negative for a free
    if (d.live > d.peak) d.peak = d.live;
    // Every block allocated while the tracker lives is booked to its owner; a free of a block from
    // before the tracker (untracked) is counted apart.
    if (alloc_size > 0) {
      const uint32_t owner = s_->current_owner();
      auto [it, fresh] = s_->blocks.try_emplace(ptr, MemoryTracker::State::Block{di, owner, alloc_size});
      if (!fresh) {  // a block freed without a report: its bytes leave its old owner
        s_->book(s_->devices[it->second.device], it->second.owner, -it->second.bytes);
        it->second = {di, owner, alloc_size};
      }
      s_->book(d, owner, alloc_size);
    } else {
      auto it = s_->blocks.find(ptr);
      if (it != s_->blocks.end()) {
        s_->book(s_->devices[it->second.device], it->second.owner, -it->second.bytes);
        s_->blocks.erase(it);
      } else {
        d.before += alloc_size;
      }
    }
    if (!s_->samples) return;
    const auto now = std::chrono::steady_clock::now();
    s_->kept.push_back({now, di, d.live});
    if (d.live > (d.windowed ? d.window_peak.bytes : 0)) {
      d.windowed = true;
      d.window_peak.at = now;
      d.window_peak.bytes = d.live;
      d.window_peak.live = s_->live_set(d);
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
  const auto* d = state_->find(device);
  return d ? d->peak : 0;
}

int64_t MemoryTracker::live_bytes(const std::string& device) const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  const auto* d = state_->find(device);
  return d ? d->live : 0;
}

void MemoryTracker::keep_samples(bool on) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  if (on && !state_->samples) {
    for (auto& d : state_->devices) {
      d.windowed = true;
      d.window_peak.at = std::chrono::steady_clock::now();
      d.window_peak.bytes = d.live;
      d.window_peak.live = state_->live_set(d);
    }
  }
  state_->samples = on;
}

PeakView MemoryTracker::peak_live(const std::string& device, size_t max_owners) const {
  PeakView peak;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    const auto* d = state_->find(device);
    if (d && d->windowed) peak = d->window_peak;
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
  if (reporter && ptr) reporter->relabel(ptr, kind, name);
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
    all.reserve(state_->kept.size());
    for (const auto& k : state_->kept) all.push_back({k.at, state_->devices[k.device].name, k.live});
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
  for (auto& d : state_->devices) d.peak = d.live;
}

}  // namespace kiln::runtime
