// The buffer holds [begin_, end_) unread bytes. A line that does not fit moves to the front and
// the buffer grows (doubling) up to max_line + one chunk; past that the line is discarded in
// chunk-sized steps until its "\n". A line the memory left cannot hold is skipped the same way,
// and a buffer a long line grew is shrunk again once it holds little.
#include "engine/importers/common/line_reader.h"

#include <cstring>
#include <new>

namespace kiln::importers {

LineReader::LineReader(ByteSource& source, size_t max_line_bytes, size_t chunk_bytes)
    : source_(source), max_line_(max_line_bytes), chunk_(chunk_bytes < 64 ? 64 : chunk_bytes), buf_(chunk_) {}

bool LineReader::fill() {
  if (eof_) return false;
  if (begin_ > 0) {  // keep only the unread part, at the front
    std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  if (buf_.size() > 4 * chunk_ && end_ <= chunk_) {
    // A long line before made the buffer large: give that memory back once it holds little (when
    // the memory left cannot hold the smaller one, the large one stays).
    try {
      std::vector<char> smaller(2 * chunk_);
      std::memcpy(smaller.data(), buf_.data(), end_);
      buf_.swap(smaller);
    } catch (const std::bad_alloc&) {
    }
  }
  if (buf_.size() - end_ < chunk_ / 2) {
    try {
      buf_.resize(buf_.size() * 2);
    } catch (const std::bad_alloc&) {
      out_of_memory_ = true;  // next() skips this line as overlong
      return true;
    }
  }
  size_t got = source_.read(buf_.data() + end_, buf_.size() - end_);
  if (got == 0) {
    eof_ = true;
    return false;
  }
  end_ += got;
  return true;
}

bool LineReader::next(std::string_view& line) {
  while (true) {
    const char* start = buf_.data() + begin_;
    const char* nl = static_cast<const char*>(std::memchr(start + scanned_, '\n', end_ - begin_ - scanned_));
    if (nl) {
      size_t len = static_cast<size_t>(nl - start);
      begin_ += len + 1;
      scanned_ = 0;
      ++line_number_;
      if (len > 0 && start[len - 1] == '\r') --len;
      line = std::string_view(start, len);
      return true;
    }
    scanned_ = end_ - begin_;
    if (scanned_ > max_line_ || out_of_memory_) {  // overlong: drop what we have and skip to the next "\n"
      ++line_number_;
      if (overlong_++ == 0) first_overlong_ = line_number_;
      begin_ = end_ = scanned_ = 0;
      out_of_memory_ = false;
      if (buf_.size() > 2 * chunk_) std::vector<char>(chunk_).swap(buf_);
      while (true) {
        size_t got = source_.read(buf_.data(), buf_.size());
        if (got == 0) {
          eof_ = true;
          return false;
        }
        const char* p = static_cast<const char*>(std::memchr(buf_.data(), '\n', got));
        if (p) {
          begin_ = static_cast<size_t>(p - buf_.data()) + 1;
          end_ = got;
          break;
        }
      }
      continue;
    }
    if (!fill()) {
      if (end_ == begin_) return false;
      // The last line has no "\n".
      const char* s = buf_.data() + begin_;
      size_t len = end_ - begin_;
      begin_ = end_;
      scanned_ = 0;
      ++line_number_;
      if (len > 0 && s[len - 1] == '\r') --len;
      line = std::string_view(s, len);
      return true;
    }
  }
}

}  // namespace kiln::importers
