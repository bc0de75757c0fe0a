// NameTable: strings that repeat across a timeline (kernel, op, lane and category names, compile
// ids) kept once and referred to by number, so that an analysis reading events one at a time keeps a
// few numbers per event, not its strings.
//
// id(text): the number of `text`, the same for equal texts; numbers count up from 0 in order of
//   first appearance. operator[](id): the text back (valid while the table lives).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace kiln::report {

class NameTable {
 public:
  uint32_t id(const std::string& text) {
    auto [it, fresh] = ids_.try_emplace(text, static_cast<uint32_t>(texts_.size()));
    if (fresh) texts_.push_back(&it->first);  // node keys do not move
    return it->second;
  }
  const std::string& operator[](uint32_t id) const { return *texts_[id]; }

 private:
  std::unordered_map<std::string, uint32_t> ids_;
  std::vector<const std::string*> texts_;
};

}  // namespace kiln::report
