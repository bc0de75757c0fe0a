// ImportTally over a vector (first-seen order) and a map from `what` to its entry.
#include "engine/importers/common/import_notes.h"

namespace kiln::importers {

void ImportTally::note(std::string_view what, std::string_view example, int64_t n) {
  auto it = index_.find(std::string(what));
  if (it == index_.end()) {
    it = index_.emplace(std::string(what), entries_.size()).first;
    Entry e;
    e.what = std::string(what);
    e.example = std::string(example.substr(0, 200));
    entries_.push_back(std::move(e));
  }
  entries_[it->second].count += n;
}

void ImportTally::note_at(size_t position, std::string_view what, std::string_view example, int64_t n) {
  if (position >= entries_.size() || index_.count(std::string(what))) return note(what, example, n);
  Entry e;
  e.what = std::string(what);
  e.example = std::string(example.substr(0, 200));
  e.count = n;
  entries_.insert(entries_.begin() + static_cast<std::ptrdiff_t>(position), std::move(e));
  for (auto& [key, at] : index_)
    if (at >= position) ++at;
  index_.emplace(std::string(what), position);
}

std::vector<size_t> ImportTally::append(const ImportTally& later) {
  std::vector<size_t> sizes{entries_.size()};
  for (const auto& e : later.entries_) {
    note(e.what, e.example, e.count);
    sizes.push_back(entries_.size());
  }
  return sizes;
}

int64_t ImportTally::count(std::string_view what) const {
  auto it = index_.find(std::string(what));
  return it == index_.end() ? 0 : entries_[it->second].count;
}

int64_t ImportTally::total() const {
  int64_t n = 0;
  for (const auto& e : entries_) n += e.count;
  return n;
}

std::vector<session::ImportNote> ImportTally::notes(const std::string& source) const {
  std::vector<session::ImportNote> out;
  for (const auto& e : entries_) out.push_back({source, e.what, e.count, e.example});
  return out;
}

}  // namespace kiln::importers
