// Block texts of the timeline (timeline_blocks.h): written with the JSON string escaper every
// session text goes through, read back by a small reader of exactly this form.
#include "engine/session/timeline_blocks.h"

#include <algorithm>
#include <charconv>
#include <cstring>

#include "engine/base/json_text.h"

namespace kiln::session {

bool is_memory_category(std::string_view category) { return category == "memory" || category == "memory peak"; }

std::vector<TimelineBlock> plan_blocks(const TimelineEvent* first, const TimelineEvent* last, int run_override) {
  std::vector<TimelineBlock> blocks;
  const size_t n = static_cast<size_t>(last - first);
  size_t bytes = 0;
  for (size_t i = 0; i < n; ++i) {
    const TimelineEvent& e = first[i];
    const int run = run_override >= 0 ? run_override : e.run;
    const size_t size = 64 + e.lane.size() + e.name.size() + e.category.size() + e.compile_id.size() +
                        e.kernel.size() + e.args_json.size();
    if (blocks.empty() || blocks.back().run != run || i - blocks.back().begin >= kBlockEvents ||
        bytes + size > kBlockBytes) {
      if (!blocks.empty()) blocks.back().end = i;
      blocks.push_back({i, i, run, 0});
      bytes = 0;
    }
    bytes += size;
    if (is_memory_category(e.category)) ++blocks.back().memory;
  }
  if (!blocks.empty()) blocks.back().end = n;
  return blocks;
}

char* BlockText::reserve(size_t n) {
  if (capacity_ - size_ < n) {
    size_t capacity = std::max(size_ + n, 2 * capacity_);
    std::unique_ptr<char[]> data(new char[capacity]);  // not zeroed: written before it is read
    if (size_) std::memcpy(data.get(), data_.get(), size_);
    data_ = std::move(data);
    capacity_ = capacity;
  }
  return data_.get() + size_;
}

namespace {

char* write_int(char* p, int64_t v) { return std::to_chars(p, p + 20, v).ptr; }

// Events with more text than this have their escaped size counted rather than bounded.
constexpr size_t kExactBytes = 1 << 20;

}  // namespace

void append_block_text(BlockText& out, const TimelineEvent* first, const TimelineEvent* last,
                       const ArgsSplits& splits) {
  char* open = out.reserve(1);
  *open = '[';
  out.end(open + 1);
  for (const TimelineEvent* e = first; e != last; ++e) {
    // Every string escaped at most 6 bytes per byte (counted exactly for a large event, whose bound
    // could exceed the memory there is), 4 integers of at most 20 digits, the punctuation:
    // reserved once per event.
    const size_t strings = e->lane.size() + e->name.size() + e->category.size() + e->compile_id.size() +
                           e->kernel.size() + e->args_json.size();
    const size_t escaped = strings < kExactBytes ? json_escaped_bound(strings)
                                                 : json_escaped_size(e->lane) + json_escaped_size(e->name) +
                                                       json_escaped_size(e->category) + json_escaped_size(e->compile_id) +
                                                       json_escaped_size(e->kernel) + json_escaped_size(e->args_json);
    char* p = out.reserve(escaped + 12 + 4 * 21 + 16);
    if (e != first) *p++ = ',';
    *p++ = '[';
    p = write_json_escaped(p, e->lane);
    *p++ = ',';
    p = write_json_escaped(p, e->name);
    *p++ = ',';
    p = write_json_escaped(p, e->category);
    *p++ = ',';
    p = write_int(p, e->start_ns);
    *p++ = ',';
    p = write_int(p, e->dur_ns);
    *p++ = ',';
    p = write_json_escaped(p, e->compile_id);
    *p++ = ',';
    p = write_json_escaped(p, e->kernel);
    *p++ = ',';
    p = write_int(p, e->correlation);
    *p++ = ',';
    auto split = splits.empty() ? splits.end() : splits.find(e);
    if (split == splits.end()) {
      p = write_json_escaped(p, e->args_json);
    } else {
      const std::string_view args = e->args_json;
      p = write_json_escaped(p, args.substr(0, split->second.head_end));
      *p++ = ',';
      p = write_int(p, split->second.part);
      *p++ = ',';
      p = write_json_escaped(p, args.substr(split->second.tail_begin));
    }
    *p++ = ']';
    out.end(p);
  }
  char* p = out.reserve(1);
  *p++ = ']';
  out.end(p);
}

namespace {

// A cursor over one block text; every step checks what it reads.
class BlockReader {
 public:
  explicit BlockReader(std::string_view text)
      : p_(text.data()), end_(text.data() + text.size()), scratch_(new char[text.size() + 8]) {}

  void skip_space() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }
  bool at_end() {
    skip_space();
    return p_ == end_;
  }
  // Consumes c (after white space) when it is next.
  bool take(char c) {
    skip_space();
    if (p_ < end_ && *p_ == c) {
      ++p_;
      return true;
    }
    return false;
  }
  void expect(char c, const char* what) {
    if (!take(c)) fail(std::string("expected '") + c + "' " + what);
  }
  void expect_after(char c, const char* field) {
    if (!take(c)) fail(std::string("expected '") + c + "' after " + field);
  }

  int64_t integer(const char* what) {
    skip_space();
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(p_, end_, v);
    if (ec == std::errc::result_out_of_range) fail(std::string("integer out of range for ") + what);
    if (ec != std::errc()) fail(std::string("expected an integer for ") + what);
    p_ = end;
    return v;
  }

  // A string's bytes are decoded into scratch_ (never longer than the text they come from) and
  // assigned to out at once.
  void string(std::string& out, const char* what) {
    skip_space();
    if (p_ >= end_ || *p_ != '"') fail(std::string("expected a string for ") + what);
    ++p_;
    char* d = scratch_.get();
    for (;;) {
      for (uint64_t w; end_ - p_ >= 8; p_ += 8, d += 8) {  // eight plain bytes at a time
        std::memcpy(&w, p_, 8);
        if (json_escape_bytes8(w)) break;
        std::memcpy(d, &w, 8);
      }
      if (p_ >= end_) fail(std::string("unterminated string for ") + what);
      const auto c = static_cast<unsigned char>(*p_);
      if (c == '"') {
        ++p_;
        out.assign(scratch_.get(), static_cast<size_t>(d - scratch_.get()));
        return;
      }
      if (c >= 0x20 && c != '\\') {
        *d++ = static_cast<char>(c);
        ++p_;
        continue;
      }
      if (c != '\\') fail(std::string("control character in the string for ") + what);
      if (++p_ >= end_) fail(std::string("unterminated escape for ") + what);
      switch (*p_++) {
        case '"': *d++ = '"'; break;
        case '\\': *d++ = '\\'; break;
        case '/': *d++ = '/'; break;
        case 'b': *d++ = '\b'; break;
        case 'f': *d++ = '\f'; break;
        case 'n': *d++ = '\n'; break;
        case 'r': *d++ = '\r'; break;
        case 't': *d++ = '\t'; break;
        case 'u': d = unicode(d, what); break;
        default: fail(std::string("unknown escape in the string for ") + what);
      }
    }
  }

  [[noreturn]] void fail(const std::string& what) const { throw BlockError(what); }

 private:
  uint32_t hex4(const char* what) {
    if (end_ - p_ < 4) fail(std::string("short \\u escape for ") + what);
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      char c = *p_++;
      v <<= 4;
      if (c >= '0' && c <= '9') v |= static_cast<uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f') v |= static_cast<uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') v |= static_cast<uint32_t>(c - 'A' + 10);
      else fail(std::string("bad \\u escape for ") + what);
    }
    return v;
  }

  // \uXXXX (a surrogate pair as one character) as UTF-8; Kiln writes only \u00XX, and those below
  // 0x20 (the writer keeps other bytes as they are).
  char* unicode(char* d, const char* what) {
    uint32_t c = hex4(what);
    if (c >= 0xD800 && c < 0xDC00) {
      if (end_ - p_ < 6 || p_[0] != '\\' || p_[1] != 'u') fail(std::string("lone surrogate in the string for ") + what);
      p_ += 2;
      uint32_t low = hex4(what);
      if (low < 0xDC00 || low >= 0xE000) fail(std::string("lone surrogate in the string for ") + what);
      c = 0x10000 + ((c - 0xD800) << 10) + (low - 0xDC00);
    } else if (c >= 0xDC00 && c < 0xE000) {
      fail(std::string("lone surrogate in the string for ") + what);
    }
    if (c < 0x80) {
      *d++ = static_cast<char>(c);
    } else if (c < 0x800) {
      *d++ = static_cast<char>(0xC0 | (c >> 6));
      *d++ = static_cast<char>(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
      *d++ = static_cast<char>(0xE0 | (c >> 12));
      *d++ = static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      *d++ = static_cast<char>(0x80 | (c & 0x3F));
    } else {
      *d++ = static_cast<char>(0xF0 | (c >> 18));
      *d++ = static_cast<char>(0x80 | ((c >> 12) & 0x3F));
      *d++ = static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      *d++ = static_cast<char>(0x80 | (c & 0x3F));
    }
    return d;
  }

  const char* p_;
  const char* end_;
  std::unique_ptr<char[]> scratch_;  // room for any string of the text, decoded
};

}  // namespace

size_t decode_block(std::string_view text, int run, const std::function<std::string(int64_t)>& part_text,
                    const std::function<void(TimelineEvent&&)>& fn) {
  BlockReader r(text);
  r.expect('[', "at the start of the block");
  size_t count = 0;
  if (r.take(']')) {
    if (!r.at_end()) r.fail("text after the block");
    return 0;
  }
  // A field and the ',' after it.
  auto string_field = [&r](std::string& field, const char* name) {
    r.string(field, name);
    r.expect_after(',', name);
  };
  auto integer_field = [&r](int64_t& field, const char* name) {
    field = r.integer(name);
    r.expect_after(',', name);
  };
  std::string tail;
  do {
    r.expect('[', "at the start of an event");
    TimelineEvent e;
    e.run = run;
    string_field(e.lane, "lane");
    string_field(e.name, "name");
    string_field(e.category, "category");
    integer_field(e.start_ns, "start_ns");
    integer_field(e.dur_ns, "dur_ns");
    string_field(e.compile_id, "compile_id");
    string_field(e.kernel, "kernel");
    integer_field(e.correlation, "correlation");
    r.string(e.args_json, "args");
    if (r.take(',')) {  // the split form: head, part id, tail
      int64_t part = 0;
      integer_field(part, "args part");
      r.string(tail, "args tail");
      e.args_json += part_text(part);
      e.args_json += tail;
    }
    r.expect(']', "at the end of an event");
    fn(std::move(e));
    ++count;
  } while (r.take(','));
  r.expect(']', "at the end of the block");
  if (!r.at_end()) r.fail("text after the block");
  return count;
}

}  // namespace kiln::session
