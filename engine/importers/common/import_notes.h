// ImportTally: what an import could not take (or took only generically), counted per kind of
// problem with the first example kept, so one bad file yields a few lines, not a flood.
//
// note(what, example, n)
//   post: the count for `what` grows by n (default one); the first example given for it is kept (cut to
//         200 characters).
// note_at(position, what, example, n)
//   post: as note(), except that a `what` not seen yet is placed at `position` in the first-seen
//         order (clamped to the end) rather than last: a note about something read before the
//         notes made since size() was `position`.
// append(later)
//   post: as if every note() of `later` had followed this tally's, in later's first-seen order.
//         Returns, for k = 0..later.size(), this tally's size() once later's first k kinds were in
//         (where a note later made after its first k kinds goes: note_at's position).
// notes(source)
//   post: one ImportNote per `what`, in first-seen order, each naming `source`.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/session/session.h"

namespace kiln::importers {

class ImportTally {
 public:
  void note(std::string_view what, std::string_view example = {}, int64_t n = 1);
  void note_at(size_t position, std::string_view what, std::string_view example = {}, int64_t n = 1);
  std::vector<size_t> append(const ImportTally& later);
  size_t size() const { return entries_.size(); }
  int64_t count(std::string_view what) const;
  int64_t total() const;
  std::vector<session::ImportNote> notes(const std::string& source) const;

 private:
  struct Entry {
    std::string what;
    std::string example;
    int64_t count = 0;
  };
  std::vector<Entry> entries_;
  std::unordered_map<std::string, size_t> index_;
};

}  // namespace kiln::importers
