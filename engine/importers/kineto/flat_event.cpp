// One recursive descent over the event, the subset and the number rules of ChromeEvent
// (chrome_event.cpp), so that an event is read here exactly when ChromeEvent would read it (or,
// for a double in args that dump() would rewrite, handed to ChromeEvent, which rewrites it).
// Containers are not copied: one written without white space is its own dump(); one with white
// space (Kineto's own files indent every event) is minified once, when the event has been read.
#include "engine/importers/kineto/flat_event.h"

#include <charconv>
#include <cstring>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "engine/base/json_text.h"
#include "engine/importers/common/json_doc.h"

namespace kiln::importers {

namespace {

constexpr int kMaxDepth = 32;      // as ChromeEvent
constexpr int kMaxIntDigits = 18;  // as ChromeEvent: always an int64

constexpr double kPowersOfTen[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                   1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

inline bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }
inline bool is_digit(char c) { return c >= '0' && c <= '9'; }

// A string without escapes, control characters or bytes above 0x7F (ChromeEvent::string's rule).
inline bool read_string(const char*& p, const char* end, std::string_view* out) {
  const char* s = ++p;
  for (;;) {
#if defined(__SSE2__)
    // Sixteen bytes at a time: '"', '\\', and (compared as signed bytes) control characters and
    // bytes above 0x7F.
    for (; end - p >= 16; p += 16) {
      const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
      const __m128i stop = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8('"')), _mm_cmpeq_epi8(x, _mm_set1_epi8('\\'))),
                                        _mm_cmplt_epi8(x, _mm_set1_epi8(0x20)));
      if (const int m = _mm_movemask_epi8(stop)) {
        p += __builtin_ctz(static_cast<unsigned>(m));
        break;
      }
    }
#endif
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

// k == lit, its length known here: compared in place rather than by a library call per member.
template <size_t N>
inline bool is(std::string_view k, const char (&lit)[N]) {
  return k.size() == N - 1 && std::memcmp(k.data(), lit, N - 1) == 0;
}

int64_t whole(double d, int64_t fallback) {  // JsonValue's conversion of a double to an integer
  if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) return fallback;
  return static_cast<int64_t>(d);
}

// raw without its white space outside strings (which hold no escapes here: '"' toggles), appended in
// runs between the spaces.
void minify(std::string& out, std::string_view raw) {
  const char* p = raw.data();
  const char* end = p + raw.size();
  const char* run = p;
  bool in_string = false;
  for (; p < end; ++p) {
    if (*p == '"') {
      in_string = !in_string;
    } else if (!in_string && is_space(*p)) {
      out.append(run, static_cast<size_t>(p - run));
      run = p + 1;
    }
  }
  out.append(run, static_cast<size_t>(end - run));
}

}  // namespace

int64_t FlatValue::i64(int64_t fallback) const {
  if (kind_ == Kind::Int) return i_;
  if (kind_ == Kind::Double) return whole(d_, fallback);
  return fallback;
}

double FlatValue::f64(double fallback) const {
  if (kind_ == Kind::Double) return d_;
  if (kind_ == Kind::Int) return static_cast<double>(i_);
  return fallback;
}

std::string FlatValue::dump() const {
  switch (kind_) {
    case Kind::None: return "";
    case Kind::String: return "\"" + std::string(text_) + "\"";
    case Kind::Double: {
      std::string out;
      append_dumped_double(out, d_);
      return out;
    }
    default: return std::string(text_);  // containers minified; integers and literals as written
  }
}

FlatEventReader::FlatEventReader() : enabled_(json_backend_is_simdjson()) {}

bool FlatEventReader::value(const char*& p, const char* end, int depth, FlatValue* slot) {
  if (p >= end) return false;
  const char c = *p;
  if (c == '{' || c == '[') return container(p, end, depth, slot, false);
  FlatValue scratch;
  FlatValue& v = slot ? *slot : scratch;
  if (c == '"') {
    v.kind_ = FlatValue::Kind::String;
    return read_string(p, end, &v.text_);
  }
  if (c == '-' || is_digit(c)) {
    const char* s = p;
    const bool negative = c == '-';
    if (negative) ++p;
    if (p >= end || !is_digit(*p)) return false;
    const char* digits = p;
    // The digits as one integer while they fit (19 of them always do), for the exact doubles below.
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
      exponent = true;
      fraction = true;
      ++p;
      if (p < end && (*p == '+' || *p == '-')) ++p;
      if (p >= end || !is_digit(*p)) return false;
      while (p < end && is_digit(*p)) ++p;
    }
    v.text_ = std::string_view(s, static_cast<size_t>(p - s));
    if (fraction) {
      v.kind_ = FlatValue::Kind::Double;
      if (!exponent && mantissa_digits <= 19 && mantissa <= (uint64_t(1) << 53) && fraction_digits <= 22) {
        // Both the digits and the power of ten are exact doubles: one division rounds as a full
        // conversion does (Clinger's fast path; a profiler's "ts": 4477225964148.717 is one).
        v.d_ = static_cast<double>(mantissa) / kPowersOfTen[fraction_digits];
        if (negative) v.d_ = -v.d_;
      } else {
        auto r = std::from_chars(s, p, v.d_);
        if (r.ec != std::errc() || r.ptr != p) return false;
      }
      // Inside a container its text is part of that container's dump(), which writes doubles its own way.
      if (depth >= 2) {
        number_.clear();
        append_dumped_double(number_, v.d_);
        if (number_ != v.text_) return false;
      }
      return true;
    }
    if (int_digits > kMaxIntDigits || (negative && int_digits == 1 && *digits == '0')) return false;
    int64_t n = 0;
    for (const char* d = digits; d < p; ++d) n = n * 10 + (*d - '0');
    v.kind_ = FlatValue::Kind::Int;
    v.i_ = negative ? -n : n;
    return true;
  }
  auto literal = [&](std::string_view word, FlatValue::Kind kind) {
    if (static_cast<size_t>(end - p) < word.size() || std::memcmp(p, word.data(), word.size()) != 0) return false;
    v.kind_ = kind;
    v.text_ = std::string_view(p, word.size());
    p += word.size();
    return true;
  };
  if (c == 't') return literal("true", FlatValue::Kind::Bool);
  if (c == 'f') return literal("false", FlatValue::Kind::Bool);
  if (c == 'n') return literal("null", FlatValue::Kind::Null);
  return false;
}

bool FlatEventReader::container(const char*& p, const char* end, int depth, FlatValue* slot, bool is_args) {
  if (depth >= kMaxDepth) return false;
  const char* begin = p;
  const bool object = *p == '{';
  const char close = object ? '}' : ']';
  const bool spaced_outside = spaced_;
  spaced_ = false;
  ++p;
  skip(p, end);
  uint32_t count = 0;
  if (p < end && *p == close) {
    ++p;
  } else {
    for (;;) {
      FlatValue* child = nullptr;
      if (object) {
        std::string_view k;
        if (p >= end || *p != '"' || !read_string(p, end, &k)) return false;
        skip(p, end);
        if (p >= end || *p != ':') return false;
        ++p;
        skip(p, end);
        if (is_args) {
          switch (k.size()) {
            case 4: child = is(k, "grid") ? &args_of_->grid : nullptr; break;
            case 5: child = is(k, "block") ? &args_of_->block : nullptr; break;
            case 6: child = is(k, "device") ? &args_of_->device : is(k, "stream") ? &args_of_->stream : nullptr; break;
            case 11:
              child = is(k, "correlation") ? &args_of_->correlation : is(k, "External id") ? &args_of_->external_id : nullptr;
              break;
            case 13: child = is(k, "shared memory") ? &args_of_->shared : nullptr; break;
            case 15: child = is(k, "Total Allocated") ? &args_of_->allocated : nullptr; break;
            case 20: child = is(k, "registers per thread") ? &args_of_->registers : nullptr; break;
            default: break;
          }
          if (child && child->exists()) child = nullptr;  // the first of a repeated name
        }
      }
      if (!value(p, end, depth + 1, child)) return false;
      ++count;
      skip(p, end);
      if (p >= end) return false;
      if (*p == ',') {
        ++p;
        skip(p, end);
        continue;
      }
      if (*p != close) return false;
      ++p;
      break;
    }
  }
  const bool spaced = spaced_;
  spaced_ = spaced_outside || spaced;
  if (slot) {
    slot->kind_ = object ? FlatValue::Kind::Object : FlatValue::Kind::Array;
    slot->count_ = count;
    const std::string_view raw(begin, static_cast<size_t>(p - begin));
    if (!spaced) {
      slot->text_ = raw;
    } else {
      if (patch_count_ == static_cast<int>(sizeof patches_ / sizeof patches_[0])) return false;
      const size_t at = minified_.size();
      minify(minified_, raw);
      patches_[patch_count_++] = {slot, at, minified_.size() - at};
    }
  }
  return true;
}

size_t FlatEventReader::read(std::string_view text, FlatEvent* ev) {
  if (!enabled_ || text.empty() || text[0] != '{') return 0;
  // Every answer of a FlatValue is gated by its kind: clearing the kinds clears the event.
  for (FlatValue* v : {&ev->ph, &ev->cat, &ev->name, &ev->pid, &ev->tid, &ev->ts, &ev->dur, &ev->id, &ev->args,
                       &ev->device, &ev->stream, &ev->correlation, &ev->external_id, &ev->grid, &ev->block,
                       &ev->registers, &ev->shared, &ev->allocated})
    v->kind_ = FlatValue::Kind::None;
  args_of_ = ev;
  minified_.clear();
  patch_count_ = 0;
  const char* p = text.data();
  const char* end = p + text.size();
  ++p;
  skip(p, end);
  if (p < end && *p == '}') {
    ++p;
  } else {
    for (;;) {
      std::string_view k;
      if (p >= end || *p != '"' || !read_string(p, end, &k)) return 0;
      skip(p, end);
      if (p >= end || *p != ':') return 0;
      ++p;
      skip(p, end);
      FlatValue* slot = nullptr;
      switch (k.size()) {
        case 2: slot = is(k, "ph") ? &ev->ph : is(k, "ts") ? &ev->ts : is(k, "id") ? &ev->id : nullptr; break;
        case 3:
          slot = is(k, "cat") ? &ev->cat : is(k, "pid") ? &ev->pid : is(k, "tid") ? &ev->tid : is(k, "dur") ? &ev->dur : nullptr;
          break;
        case 4: slot = is(k, "name") ? &ev->name : is(k, "args") ? &ev->args : nullptr; break;
        default: break;
      }
      if (slot && slot->exists()) slot = nullptr;  // the first of a repeated name
      if (p >= end) return 0;
      if (slot == &ev->args && *p == '{') {
        if (!container(p, end, 1, slot, true)) return 0;
      } else if (!value(p, end, 1, slot)) {
        return 0;
      }
      skip(p, end);
      if (p >= end) return 0;
      if (*p == ',') {
        ++p;
        skip(p, end);
        continue;
      }
      if (*p != '}') return 0;
      ++p;
      break;
    }
  }
  for (int i = 0; i < patch_count_; ++i)
    patches_[i].slot->text_ = std::string_view(minified_).substr(patches_[i].at, patches_[i].size);
  return static_cast<size_t>(p - text.data());
}

}  // namespace kiln::importers
