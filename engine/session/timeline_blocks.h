// The timeline as files of this schema store it (store_schema.cpp): events in blocks, each block
// one row of timeline_blocks holding events of one run, numbered first_seq, first_seq + 1, ...
// A block's events are one JSON text, an array with one array per event:
//   [lane, name, category, start_ns, dur_ns, compile_id, kernel, correlation, args_json]
// strings escaped as JSON (bytes >= 0x80 kept as they are, so any bytes round-trip), numbers as
// integers. An event whose args share a large value with other events (stored once in
// args_parts) has two more elements: [..., args_head, part_id, args_tail]; its args are
// args_head + the part's text + args_tail. One row per block instead of one per event: a million
// events are a few thousand rows, written as fast as their bytes, and the `timeline` view
// (json_each) still shows every reader one row per event.
//
// plan_blocks(first, last, run_override)
//   post: consecutive ranges covering [first, last) in order; each holds events of one run (the
//         event's own, or run_override when >= 0), at most kBlockEvents events and, beyond its
//         first event, at most about kBlockBytes of text. memory: its events of category "memory"
//         or "memory peak".
// BlockText: a growing text buffer (not zeroed as it grows: written at most as far as reserved).
// append_block_text(out, first, last, splits)
//   post: the block text of [first, last) appended to out; an event found in splits (by address)
//         is written in the split form, its args cut at [head_end, tail_begin) with that part id.
// decode_block(text, run, part_text, fn)
//   post: fn(event) for each event of the block text in order (run set to `run`); returns their
//         number. part_text(id) gives the text of args_parts row id.
//   error: BlockError saying what is wrong, for any text append_block_text cannot have written
//          (white space between elements is accepted; numbers must be integers).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/session/session.h"

namespace kiln::session {

constexpr size_t kBlockEvents = 512;
constexpr size_t kBlockBytes = 256 << 10;

struct TimelineBlock {
  size_t begin = 0, end = 0;  // indexes into the planned range
  int run = -1;
  int64_t memory = 0;
};

struct ArgsSplit {
  size_t head_end = 0, tail_begin = 0;
  int64_t part = 0;
};
using ArgsSplits = std::unordered_map<const TimelineEvent*, ArgsSplit>;

class BlockError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class BlockText {
 public:
  std::string_view view() const { return {data_.get(), size_}; }
  void clear() { size_ = 0; }
  // Room for n more bytes at the returned position; end(p) then sets the end at p.
  char* reserve(size_t n);
  void end(char* p) { size_ = static_cast<size_t>(p - data_.get()); }

 private:
  std::unique_ptr<char[]> data_;
  size_t size_ = 0, capacity_ = 0;
};

bool is_memory_category(std::string_view category);
std::vector<TimelineBlock> plan_blocks(const TimelineEvent* first, const TimelineEvent* last, int run_override);
void append_block_text(BlockText& out, const TimelineEvent* first, const TimelineEvent* last,
                       const ArgsSplits& splits);
size_t decode_block(std::string_view text, int run, const std::function<std::string(int64_t)>& part_text,
                    const std::function<void(TimelineEvent&&)>& fn);

}  // namespace kiln::session
