// JSON text made from values that came from someone else's file: bounded in depth and valid UTF-8.
//
// safe_dump(j, indent): j.dump with invalid UTF-8 replaced (U+FFFD) instead of throwing; a value
//   nested deeper than kMaxJsonDepth levels is written as a string saying so, so printing (which
//   recurses) can neither overflow the stack nor grow quadratically with the indentation.
// text_nesting_depth(text, limit): how deep the brackets of JSON text nest (outside strings),
//   counting no further than limit + 1: test it before parsing text into a value that will be printed.
// append_json_string(out, s): s as a JSON string, byte for byte what safe_dump writes for it (the
//   short escapes, \u00xx for other control characters, UTF-8 as it is, invalid UTF-8 replaced).
// append_json_escaped(out, s): the same escapes with every byte above 0x7F as it is, unchecked: for
//   text known to be valid UTF-8 (simdjson's strings).
// write_json_escaped(p, s): what append_json_escaped appends, written at p, which must have room for
//   json_escaped_size(s) bytes (json_escaped_bound(s.size()) at most); returns the end of what it wrote.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace kiln {

inline constexpr int kMaxJsonDepth = 64;

int text_nesting_depth(std::string_view text, int limit = kMaxJsonDepth);

void append_json_string(std::string& out, std::string_view s);
void append_json_escaped(std::string& out, std::string_view s);
char* write_json_escaped(char* p, std::string_view s);
size_t json_escaped_size(std::string_view s);
constexpr size_t json_escaped_bound(size_t n) { return 6 * n + 2; }

// Nonzero when one of the eight bytes of w (read with memcpy) is one a JSON string escapes: a control
// character, '"' or '\\' (a few false alarms above such a byte; never a miss).
inline uint64_t json_escape_bytes8(uint64_t w) {
  constexpr uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
  const uint64_t control = (w - 0x20 * ones) & ~w & highs;
  const uint64_t q = w ^ (0x22 * ones), b = w ^ (0x5C * ones);
  return control | ((q - ones) & ~q & highs) | ((b - ones) & ~b & highs);
}

#if defined(__SSE2__)
// Bit i set when byte i of the sixteen at p is one a JSON string escapes (exact: no false alarms):
// '"', '\\' or a control character; with StopAboveAscii also a byte above 0x7F (the importers' readers
// leave strings holding one to a full parser).
template <bool StopAboveAscii = false>
inline unsigned json_stop_mask16(const char* p) {
  const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  const __m128i special =
      _mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8('"')), _mm_cmpeq_epi8(x, _mm_set1_epi8('\\')));
  // Compared as signed bytes, below 0x20 is a control character or a byte above 0x7F; as unsigned,
  // at most 0x1F a control character only.
  const __m128i low = StopAboveAscii ? _mm_cmplt_epi8(x, _mm_set1_epi8(0x20))
                                     : _mm_cmpeq_epi8(_mm_max_epu8(x, _mm_set1_epi8(0x1F)), _mm_set1_epi8(0x1F));
  return static_cast<unsigned>(_mm_movemask_epi8(_mm_or_si128(low, special)));
}
#endif

// Depth of a JSON value (a scalar is 0), counting no further than limit + 1. Iterative.
template <typename Json>
int json_depth(const Json& root, int limit = kMaxJsonDepth) {
  std::vector<std::pair<const Json*, int>> stack{{&root, 0}};
  int deepest = 0;
  while (!stack.empty()) {
    auto [j, d] = stack.back();
    stack.pop_back();
    if (!j->is_structured()) continue;
    if (d + 1 > deepest) deepest = d + 1;
    if (deepest > limit) return limit + 1;
    for (const auto& child : *j) stack.emplace_back(&child, d + 1);
  }
  return deepest;
}

template <typename Json>
std::string safe_dump(const Json& j, int indent = -1) {
  if (json_depth(j) > kMaxJsonDepth)
    return Json("(JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels, not kept)").dump();
  return j.dump(indent, ' ', false, Json::error_handler_t::replace);
}

}  // namespace kiln
