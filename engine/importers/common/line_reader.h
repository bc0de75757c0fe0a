// LineReader: the lines of a ByteSource, one at a time, through one reusable buffer.
//
// next(line)
//   post: true and `line` views the next line without its "\n" (and without a "\r" before it),
//         valid until the next call; false at the end. A last line without "\n" is still a line.
//         A line longer than max_line_bytes is skipped whole (not returned): overlong_lines()
//         counts those, so memory stays bounded by max_line_bytes plus one chunk; so is a line
//         the memory left cannot hold (the buffer's growth failed).
// line_number(): 1-based number of the line last returned (skipped lines count too).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/importers/common/byte_source.h"

namespace kiln::importers {

class LineReader {
 public:
  explicit LineReader(ByteSource& source, size_t max_line_bytes = size_t(1) << 30, size_t chunk_bytes = 4 << 20);
  bool next(std::string_view& line);
  int64_t line_number() const { return line_number_; }
  int64_t overlong_lines() const { return overlong_; }
  int64_t first_overlong_line() const { return first_overlong_; }

 private:
  bool fill();  // reads more bytes after the unread part; false at the end of input
  ByteSource& source_;
  size_t max_line_;
  size_t chunk_;
  std::vector<char> buf_;
  size_t begin_ = 0;  // first unread byte
  size_t end_ = 0;    // one past the last valid byte
  size_t scanned_ = 0;  // bytes after begin_ already searched for "\n"
  bool eof_ = false;
  bool out_of_memory_ = false;  // the buffer could not grow for the line being read
  int64_t line_number_ = 0;
  int64_t overlong_ = 0;
  int64_t first_overlong_ = 0;
};

}  // namespace kiln::importers
