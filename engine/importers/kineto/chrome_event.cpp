// A recursive descent over the accepted subset; any byte outside it ends the read with false, so a
// text is either read whole or left to JsonParser. Containers below the root are written to dumped_
// as they are read (the same minified form simdjson's dump writes: no white space, strings as they
// are since none holds a character to escape, integers as written, doubles reformatted).
#include "engine/importers/kineto/chrome_event.h"

#include <charconv>
#include <cstring>

#include "engine/base/json_text.h"
#include "engine/importers/common/json_doc.h"

namespace kiln::importers {

namespace {

constexpr int kMaxDepth = 32;
constexpr int kMaxIntDigits = 18;  // always an int64, never simdjson's uint64 or big-integer cases

inline void skip_space(const char*& p, const char* end) {
  while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) ++p;
}

inline bool is_digit(char c) { return c >= '0' && c <= '9'; }

// JsonValue's conversion of a double to an integer (json_doc.cpp's whole_i64).
int64_t whole(double d, int64_t fallback) {
  if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) return fallback;
  return static_cast<int64_t>(d);
}

const bool kEnabled = json_backend_is_simdjson();

}  // namespace

bool ChromeEvent::string(const char*& p, const char* end, std::string_view* out) {
  const char* s = ++p;  // past the opening quote
  for (;;) {
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

void ChromeEvent::emit_scalar(const Node& n) {
  switch (n.kind) {
    case Kind::String:
      dumped_ += '"';
      dumped_.append(n.text);
      dumped_ += '"';
      break;
    case Kind::Double: append_dumped_double(dumped_, n.d); break;
    default: dumped_.append(n.text); break;  // integers and literals as written
  }
}

int32_t ChromeEvent::value(const char*& p, const char* end, int depth, bool emit) {
  if (p >= end) return -1;
  auto at = static_cast<int32_t>(nodes_.size());
  nodes_.emplace_back();
  char c = *p;
  if (c == '{' || c == '[') {
    if (depth >= kMaxDepth) return -1;
    const bool object = c == '{';
    const char close = object ? '}' : ']';
    nodes_[at].kind = object ? Kind::Object : Kind::Array;
    nodes_[at].dump_begin = static_cast<uint32_t>(dumped_.size());
    if (emit) dumped_ += c;
    ++p;
    skip_space(p, end);
    if (p < end && *p == close) {
      ++p;
    } else {
      int32_t last = -1;
      uint32_t count = 0;
      for (;;) {
        std::string_view key;
        if (object) {
          if (p >= end || *p != '"' || !string(p, end, &key)) return -1;
          skip_space(p, end);
          if (p >= end || *p != ':') return -1;
          ++p;
          skip_space(p, end);
          if (emit) {
            dumped_ += '"';
            dumped_.append(key);
            dumped_ += "\":";
          }
        }
        // Members of the root are written out only when they are containers.
        bool child_emit = emit || (p < end && (*p == '{' || *p == '['));
        int32_t child = value(p, end, depth + 1, child_emit);
        if (child < 0) return -1;
        nodes_[child].key = key;
        if (last < 0) nodes_[at].first_child = child;
        else nodes_[last].next = child;
        last = child;
        ++count;
        skip_space(p, end);
        if (p >= end) return -1;
        if (*p == ',') {
          if (emit) dumped_ += ',';
          ++p;
          skip_space(p, end);
          continue;
        }
        if (*p != close) return -1;
        ++p;
        break;
      }
      nodes_[at].count = count;
    }
    if (emit) dumped_ += close;
    nodes_[at].emitted = emit;
    nodes_[at].dump_end = static_cast<uint32_t>(dumped_.size());
    return at;
  }
  Node& n = nodes_[at];
  if (c == '"') {
    n.kind = Kind::String;
    std::string_view s;
    if (!string(p, end, &s)) return -1;
    nodes_[at].text = s;
    if (emit) emit_scalar(nodes_[at]);
    return at;
  }
  if (c == '-' || is_digit(c)) {
    const char* s = p;
    bool negative = c == '-';
    if (negative) ++p;
    if (p >= end || !is_digit(*p)) return -1;
    const char* digits = p;
    if (*p == '0') ++p;
    else
      while (p < end && is_digit(*p)) ++p;
    size_t int_digits = static_cast<size_t>(p - digits);
    bool fraction = false;
    if (p < end && *p == '.') {
      fraction = true;
      ++p;
      if (p >= end || !is_digit(*p)) return -1;
      while (p < end && is_digit(*p)) ++p;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
      fraction = true;
      ++p;
      if (p < end && (*p == '+' || *p == '-')) ++p;
      if (p >= end || !is_digit(*p)) return -1;
      while (p < end && is_digit(*p)) ++p;
    }
    n.text = std::string_view(s, static_cast<size_t>(p - s));
    if (fraction) {
      n.kind = Kind::Double;
      auto r = std::from_chars(s, p, n.d);
      if (r.ec != std::errc() || r.ptr != p) return -1;  // out of range: left to JsonParser
    } else {
      if (int_digits > kMaxIntDigits || (negative && int_digits == 1 && *digits == '0')) return -1;
      int64_t v = 0;
      for (const char* d = digits; d < p; ++d) v = v * 10 + (*d - '0');
      n.kind = Kind::Int;
      n.i = negative ? -v : v;
    }
    if (emit) emit_scalar(n);
    return at;
  }
  auto literal = [&](std::string_view word) {
    if (static_cast<size_t>(end - p) < word.size() || std::memcmp(p, word.data(), word.size()) != 0) return false;
    n.text = std::string_view(p, word.size());
    p += word.size();
    return true;
  };
  if (c == 't' && literal("true")) {
    n.kind = Kind::Bool;
    n.truth = true;
  } else if (c == 'f' && literal("false")) {
    n.kind = Kind::Bool;
  } else if (c == 'n' && literal("null")) {
    n.kind = Kind::Null;
  } else {
    return -1;
  }
  if (emit) emit_scalar(n);
  return at;
}

int32_t ChromeEvent::read(std::string_view text) {
  if (!kEnabled) return -1;
  const size_t nodes_before = nodes_.size(), dumped_before = dumped_.size();
  const char* p = text.data();
  const char* end = p + text.size();
  skip_space(p, end);
  int32_t root = p < end && *p == '{' ? value(p, end, 0, false) : -1;
  if (root >= 0) skip_space(p, end);
  if (root < 0 || p != end) {
    nodes_.resize(nodes_before);
    dumped_.resize(dumped_before);
    return -1;
  }
  return root;
}

int32_t ChromeEvent::read_prefix(std::string_view text, size_t* length) {
  if (!kEnabled || text.empty() || text[0] != '{') return -1;
  const size_t nodes_before = nodes_.size(), dumped_before = dumped_.size();
  const char* p = text.data();
  int32_t root = value(p, p + text.size(), 0, false);
  if (root < 0) {
    nodes_.resize(nodes_before);
    dumped_.resize(dumped_before);
    return -1;
  }
  *length = static_cast<size_t>(p - text.data());
  return root;
}

bool EventValue::is_null() const { return node_ >= 0 && doc_->nodes_[node_].kind == ChromeEvent::Kind::Null; }
bool EventValue::is_object() const { return node_ >= 0 && doc_->nodes_[node_].kind == ChromeEvent::Kind::Object; }
bool EventValue::is_array() const { return node_ >= 0 && doc_->nodes_[node_].kind == ChromeEvent::Kind::Array; }
bool EventValue::is_string() const { return node_ >= 0 && doc_->nodes_[node_].kind == ChromeEvent::Kind::String; }
bool EventValue::is_bool() const { return node_ >= 0 && doc_->nodes_[node_].kind == ChromeEvent::Kind::Bool; }
bool EventValue::is_number() const {
  if (node_ < 0) return false;
  auto k = doc_->nodes_[node_].kind;
  return k == ChromeEvent::Kind::Int || k == ChromeEvent::Kind::Double;
}

std::string_view EventValue::str(std::string_view fallback) const {
  return is_string() ? doc_->nodes_[node_].text : fallback;
}

int64_t EventValue::i64(int64_t fallback) const {
  if (node_ < 0) return fallback;
  const auto& n = doc_->nodes_[node_];
  if (n.kind == ChromeEvent::Kind::Int) return n.i;
  if (n.kind == ChromeEvent::Kind::Double) return whole(n.d, fallback);
  return fallback;
}

double EventValue::f64(double fallback) const {
  if (node_ < 0) return fallback;
  const auto& n = doc_->nodes_[node_];
  if (n.kind == ChromeEvent::Kind::Double) return n.d;
  if (n.kind == ChromeEvent::Kind::Int) return static_cast<double>(n.i);
  return fallback;
}

EventValue EventValue::operator[](std::string_view key) const {
  if (!is_object()) return {};
  // Member names of one length mostly differ in their first byte: compared before the rest.
  for (int32_t c = doc_->nodes_[node_].first_child; c >= 0; c = doc_->nodes_[c].next) {
    std::string_view k = doc_->nodes_[c].key;
    if (k.size() == key.size() && (key.empty() || (k[0] == key[0] && std::memcmp(k.data(), key.data(), key.size()) == 0)))
      return EventValue(doc_, c);
  }
  return {};
}

size_t EventValue::size() const {
  if (!is_object() && !is_array()) return 0;
  return doc_->nodes_[node_].count;
}

std::string_view EventValue::dumped() const {
  if (node_ < 0) return {};
  const auto& n = doc_->nodes_[node_];
  if ((n.kind != ChromeEvent::Kind::Object && n.kind != ChromeEvent::Kind::Array) || !n.emitted) return {};
  return std::string_view(doc_->dumped_).substr(n.dump_begin, n.dump_end - n.dump_begin);
}

std::string EventValue::dump() const {
  if (node_ < 0) return "";
  const auto& n = doc_->nodes_[node_];
  switch (n.kind) {
    case ChromeEvent::Kind::Object:
    case ChromeEvent::Kind::Array:
      if (!n.emitted) return "";  // a root: not written out (never dumped by the importer)
      return doc_->dumped_.substr(n.dump_begin, n.dump_end - n.dump_begin);
    case ChromeEvent::Kind::String: return "\"" + std::string(n.text) + "\"";
    case ChromeEvent::Kind::Double: {
      std::string out;
      append_dumped_double(out, n.d);
      return out;
    }
    default: return std::string(n.text);
  }
}

}  // namespace kiln::importers
