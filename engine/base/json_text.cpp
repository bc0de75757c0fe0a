#include "engine/base/json_text.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>

namespace kiln {

namespace {

constexpr uint64_t kOnes = 0x0101010101010101ULL, kHighs = 0x8080808080808080ULL;

// Whether s holds a byte above 0x7F, eight bytes at a time.
bool beyond_ascii(std::string_view s) {
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    if (w & kHighs) return true;
  }
  for (; i < s.size(); ++i)
    if (static_cast<unsigned char>(s[i]) >= 0x80) return true;
  return false;
}

// The first position at or after `from` of a byte a JSON string escapes (a control character, '"'
// or '\\'), s.size() when there is none. Sixteen (or eight) bytes at a time: graph and guard texts
// are long runs of plain ASCII.
size_t plain_run_end(std::string_view s, size_t from) {
  size_t i = from;
#if defined(__SSE2__)
  for (; i + 16 <= s.size(); i += 16)
    if (const unsigned m = json_stop_mask16(s.data() + i)) return i + static_cast<size_t>(__builtin_ctz(m));
#endif
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    if (json_escape_bytes8(w)) break;
  }
  for (; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == '"' || c == '\\') return i;
  }
  return s.size();
}

// Bytes each character adds when escaped: 1 for \" \\ \b \t \n \f \r, 5 for \u00XX, 0 for the rest.
struct EscapeCost {
  unsigned char extra[256] = {};
  constexpr EscapeCost() {
    for (int c = 0; c < 0x20; ++c) extra[c] = 5;
    for (int c : {'"', '\\', '\b', '\t', '\n', '\f', '\r'}) extra[c] = 1;
  }
};
constexpr EscapeCost kEscape;

// The escape of c (one that kEscape marks) at p; returns the end.
char* write_escape(char* p, unsigned char c) {
  *p++ = '\\';
  switch (c) {
    case '"': *p++ = '"'; break;
    case '\\': *p++ = '\\'; break;
    case '\b': *p++ = 'b'; break;
    case '\t': *p++ = 't'; break;
    case '\n': *p++ = 'n'; break;
    case '\f': *p++ = 'f'; break;
    case '\r': *p++ = 'r'; break;
    default: {
      static const char kHex[] = "0123456789abcdef";
      *p++ = 'u';
      *p++ = '0';
      *p++ = '0';
      *p++ = kHex[c >> 4];
      *p++ = kHex[c & 15];
    }
  }
  return p;
}

// s's bytes, escaped, at p (without quotes); returns the end. Plain runs are copied sixteen (or
// eight) bytes at once; args texts are JSON themselves, a quote every few bytes, so the plain bytes
// before each special one are copied together.
char* write_escaped(char* p, std::string_view s) {
  const char* in = s.data();
  const size_t n = s.size();
  size_t i = 0;
#if defined(__SSE2__)
  while (i + 16 <= n) {
    const unsigned m = json_stop_mask16(in + i);
    if (m == 0) {
      std::memcpy(p, in + i, 16);  // all sixteen are written as they are: the output has room for them
      p += 16;
      i += 16;
      continue;
    }
    const size_t k = static_cast<size_t>(__builtin_ctz(m));
    std::memcpy(p, in + i, k);
    const auto c = static_cast<unsigned char>(in[i + k]);
    if (c == '"' || c == '\\') {  // most of them: an args text's quotes
      p[k] = '\\';
      p[k + 1] = static_cast<char>(c);
      p += k + 2;
    } else {
      p = write_escape(p + k, c);
    }
    i += k + 1;
  }
#endif
  while (i < n) {
    if (i + 8 <= n) {
      uint64_t w;
      std::memcpy(&w, in + i, 8);
      if (!json_escape_bytes8(w)) {
        std::memcpy(p, &w, 8);
        p += 8;
        i += 8;
        continue;
      }
    }
    for (const size_t stop = std::min(n, i + 8); i < stop; ++i) {  // the eight holding a special byte
      const auto c = static_cast<unsigned char>(in[i]);
      if (kEscape.extra[c]) p = write_escape(p, c);
      else *p++ = static_cast<char>(c);
    }
  }
  return p;
}

}  // namespace

char* write_json_escaped(char* p, std::string_view s) {
  *p++ = '"';
  p = write_escaped(p, s);
  *p++ = '"';
  return p;
}

size_t json_escaped_size(std::string_view s) {
  size_t extra = 0;
  for (size_t i = plain_run_end(s, 0); i < s.size(); i = plain_run_end(s, i + 1))
    extra += kEscape.extra[static_cast<unsigned char>(s[i])];
  return s.size() + extra + 2;
}

// Sized first (the escapes counted), then written in place: one allocation per string.
void append_json_escaped(std::string& out, std::string_view s) {
  const size_t size = json_escaped_size(s);
  const size_t extra = size - s.size() - 2;
  size_t at = out.size();
  out.resize(at + size);  // written exactly below
  char* p = out.data() + at;
  *p++ = '"';
  if (extra == 0) {
    if (!s.empty()) std::memcpy(p, s.data(), s.size());  // an empty view may hold no pointer
    p += s.size();
  } else {
    p = write_escaped(p, s);
  }
  *p = '"';
}

// nlohmann writes ASCII with the escapes above (DEL as it is); a string holding any other byte is
// left to it, whose UTF-8 check and repair it then gets (graphs, guards and names are ASCII nearly
// always: escaping them through a json value was a twentieth of a large log's import).
void append_json_string(std::string& out, std::string_view s) {
  if (beyond_ascii(s)) out += nlohmann::json(std::string(s)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  else append_json_escaped(out, s);
}

int text_nesting_depth(std::string_view text, int limit) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '[' || c == '{') {
      if (++depth > deepest) deepest = depth;
      if (deepest > limit) return limit + 1;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

}  // namespace kiln
