// The nesting limit, strings and numbers of Chrome trace events, as ChromeEvent and FlatEventReader both read them
// (one rule for both: the flat reader must accept a subset of what ChromeEvent accepts, with the same
// values).
//
// scan_plain_string(p, end, &out)
//   pre:  *p == '"'.
//   post: true when the string holds no escape, control character or byte above 0x7F: out views its
//         contents and p stands after the closing quote. false otherwise (or when end comes first).
// scan_number(p, end, &n)
//   pre:  *p is '-' or a digit.
//   post: true for a JSON number that is a plain integer of at most 18 digits (never "-0": always an
//         int64, never simdjson's uint64 or big-integer cases) or a finite double; p stands after it.
//         Doubles with at most 19 digits, a mantissa up to 2^53, at most 22 fraction digits and no
//         exponent are one exact division (Clinger's fast path: a profiler's "ts": 4477225964148.717),
//         others std::from_chars: the same correctly rounded value.
#pragma once

#include <charconv>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "engine/base/json_text.h"

namespace kiln::importers {

// Containers nest at most this deep in an event either reader reads (deeper: left to JsonParser).
constexpr int kMaxEventDepth = 32;

inline bool scan_plain_string(const char*& p, const char* end, std::string_view* out) {
  const char* s = ++p;  // past the opening quote
  for (;;) {
#if defined(__SSE2__)
    // Sixteen bytes at a time: '"', '\\', and (compared as signed bytes) control characters and
    // bytes above 0x7F.
    for (; end - p >= 16; p += 16) {
      if (const unsigned m = json_stop_mask16<true>(p)) {
        p += __builtin_ctz(m);
        break;
      }
    }
#endif
    // Eight bytes at a time up to one that is '"', '\\', a control character or above 0x7F.
    for (uint64_t w; end - p >= 8; p += 8) {
      std::memcpy(&w, p, 8);
      if (json_escape_bytes8(w) | (w & 0x8080808080808080ULL)) break;
    }
    if (p >= end) return false;
    auto c = static_cast<unsigned char>(*p);
    if (c == '"') {
      *out = std::string_view(s, static_cast<size_t>(p - s));
      ++p;
      return true;
    }
    if (c == '\\' || c < 0x20 || c >= 0x80) return false;
    ++p;
  }
}

struct ScannedNumber {
  bool is_double = false;
  int64_t i = 0;
  double d = 0;
  std::string_view text;  // as written
};

inline bool scan_number(const char*& p, const char* end, ScannedNumber* n) {
  constexpr int kMaxIntDigits = 18;
  constexpr double kPowersOfTen[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                     1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
  auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
  const char* s = p;
  const bool negative = *p == '-';
  if (negative) ++p;
  if (p >= end || !is_digit(*p)) return false;
  const char* digits = p;
  // The digits as one integer while they fit (19 of them always do), for the exact doubles.
  uint64_t mantissa = 0;
  int mantissa_digits = 0, fraction_digits = 0;
  auto take = [&] {
    mantissa = mantissa * 10 + static_cast<uint64_t>(*p - '0');
    ++mantissa_digits;
    ++p;
  };
  if (*p == '0') ++p;
  else
    while (p < end && is_digit(*p)) take();
  const size_t int_digits = static_cast<size_t>(p - digits);
  bool fraction = false, exponent = false;
  if (p < end && *p == '.') {
    fraction = true;
    ++p;
    if (p >= end || !is_digit(*p)) return false;
    for (; p < end && is_digit(*p); ++fraction_digits) take();
  }
  if (p < end && (*p == 'e' || *p == 'E')) {
    exponent = fraction = true;
    ++p;
    if (p < end && (*p == '+' || *p == '-')) ++p;
    if (p >= end || !is_digit(*p)) return false;
    while (p < end && is_digit(*p)) ++p;
  }
  n->text = std::string_view(s, static_cast<size_t>(p - s));
  n->is_double = fraction;
  if (fraction) {
    if (!exponent && mantissa_digits <= 19 && mantissa <= (uint64_t(1) << 53) && fraction_digits <= 22) {
      n->d = static_cast<double>(mantissa) / kPowersOfTen[fraction_digits];
      if (negative) n->d = -n->d;
      return true;
    }
    auto r = std::from_chars(s, p, n->d);
    return r.ec == std::errc() && r.ptr == p;  // out of range: left to JsonParser
  }
  if (int_digits > kMaxIntDigits || (negative && int_digits == 1 && *digits == '0')) return false;
  int64_t v = 0;
  for (const char* d = digits; d < p; ++d) v = v * 10 + (*d - '0');
  n->i = negative ? -v : v;
  return true;
}

}  // namespace kiln::importers
