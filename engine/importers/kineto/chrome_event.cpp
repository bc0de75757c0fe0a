// A recursive descent over the accepted subset; any byte outside it ends the read with false, so a
// text is either read whole or left to JsonParser. Containers below the root are written to dumped_
// as they are read (the same minified form simdjson's dump writes: no white space, strings as they
// are since none holds a character to escape, integers as written, doubles reformatted).
#include "engine/importers/kineto/chrome_event.h"

#include <cstring>

#include "engine/importers/common/json_doc.h"
#include "engine/importers/kineto/event_scalars.h"

namespace kiln::importers {

namespace {


inline void skip_space(const char*& p, const char* end) {
  while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) ++p;
}

inline bool is_digit(char c) { return c >= '0' && c <= '9'; }


const bool kEnabled = json_backend_is_simdjson();

}  // namespace

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
    if (depth >= kMaxEventDepth) return -1;
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
          if (p >= end || *p != '"' || !scan_plain_string(p, end, &key)) return -1;
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
    if (!scan_plain_string(p, end, &s)) return -1;
    nodes_[at].text = s;
    if (emit) emit_scalar(nodes_[at]);
    return at;
  }
  if (c == '-' || is_digit(c)) {
    ScannedNumber number;
    if (!scan_number(p, end, &number)) return -1;  // outside the subset (or out of range): left to JsonParser
    n.text = number.text;
    n.kind = number.is_double ? Kind::Double : Kind::Int;
    n.d = number.d;
    n.i = number.i;
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
  if (n.kind == ChromeEvent::Kind::Double) return whole_i64(n.d, fallback);
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
