// JSON text made from values that came from someone else's file: bounded in depth and valid UTF-8.
//
// safe_dump(j, indent): j.dump with invalid UTF-8 replaced (U+FFFD) instead of throwing; a value
//   nested deeper than kMaxJsonDepth levels is written as a string saying so, so printing (which
//   recurses) can neither overflow the stack nor grow quadratically with the indentation.
// text_nesting_depth(text, limit): how deep the brackets of JSON text nest (outside strings),
//   counting no further than limit + 1: test it before parsing text into a value that will be printed.
// append_json_string(out, s): s as a JSON string, byte for byte what safe_dump writes for it (the
//   short escapes, \u00xx for other control characters, UTF-8 as it is, invalid UTF-8 replaced).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kiln {

inline constexpr int kMaxJsonDepth = 64;

int text_nesting_depth(std::string_view text, int limit = kMaxJsonDepth);

void append_json_string(std::string& out, std::string_view s);

// The first position at or after `from` of a byte a JSON string escapes (a control character, '"'
// or '\\'), or of one above 0x7F when `stop_at_high`; s.size() when there is none. Eight bytes
// at a time: graph and guard texts are long runs of plain ASCII.
inline size_t json_plain_run_end(std::string_view s, size_t from, bool stop_at_high) {
  constexpr uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
  auto special = [&](uint64_t w) {
    const uint64_t control = (w - 0x20 * ones) & ~w & highs;  // a byte below 0x20
    const uint64_t q = w ^ (0x22 * ones), b = w ^ (0x5C * ones);
    const uint64_t quote = (q - ones) & ~q & highs, slash = (b - ones) & ~b & highs;
    return control | quote | slash | (stop_at_high ? w & highs : 0);
  };
  size_t i = from;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    if (special(w)) break;
  }
  for (; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == '"' || c == '\\' || (stop_at_high && c >= 0x80)) return i;
  }
  return s.size();
}

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
