// IdIndex: a 64-bit id (a CUDA correlation, a profiler "External id") → the index of the first
// event that carried it, for the millions of events of a profiler trace. One flat table probed
// linearly: no allocation per id (std::unordered_map's nodes made the links of a million-event
// import cost 0.1-0.2 s per map).
//
// emplace(id, index)
//   post: true and id → index when id was absent; false and the table unchanged otherwise (the
//         first index stays, as std::unordered_map::emplace keeps it).
// find(id)
//   post: the index stored for id, or kAbsent.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kiln::importers {

class IdIndex {
 public:
  static constexpr size_t kAbsent = SIZE_MAX;

  explicit IdIndex(size_t expected = 0) { reserve(expected); }

  void reserve(size_t expected) {
    size_t want = 16;
    while (want < expected * 2) want *= 2;
    if (want > slots_.size()) rehash(want);
  }

  bool emplace(int64_t id, size_t index) {
    if ((size_ + 1) * 2 > slots_.size()) rehash(slots_.empty() ? 16 : slots_.size() * 2);
    Slot& s = slots_[probe(id)];
    if (s.index != kAbsent) return false;
    s = {id, index};
    ++size_;
    return true;
  }

  size_t find(int64_t id) const {
    if (slots_.empty()) return kAbsent;
    return slots_[probe(id)].index;
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

 private:
  struct Slot {
    int64_t id = 0;
    size_t index = kAbsent;  // kAbsent: an empty slot
  };

  // The slot holding id, or the empty slot where it would go (the table is never full).
  size_t probe(int64_t id) const {
    const size_t mask = slots_.size() - 1;
    uint64_t h = static_cast<uint64_t>(id) * 0x9E3779B97F4A7C15ull;
    size_t at = static_cast<size_t>(h ^ (h >> 29)) & mask;
    while (slots_[at].index != kAbsent && slots_[at].id != id) at = (at + 1) & mask;
    return at;
  }

  void rehash(size_t slots) {
    std::vector<Slot> old;
    old.swap(slots_);
    slots_.assign(slots, Slot{});
    for (const Slot& s : old)
      if (s.index != kAbsent) slots_[probe(s.id)] = s;
  }

  std::vector<Slot> slots_;
  size_t size_ = 0;
};

}  // namespace kiln::importers
