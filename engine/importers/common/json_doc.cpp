// Backend selection happens here only. simdjson needs SIMDJSON_PADDING readable bytes after the
// text; the parser copies each text into its own padded buffer, reused between parses.
#include "engine/importers/common/json_doc.h"

#include "engine/base/json_text.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <new>
#include <vector>

#include "engine/base/escape.h"

#ifdef KILN_HAVE_SIMDJSON
#include <simdjson.h>
#else
#include <nlohmann/json.hpp>
#endif

namespace kiln::importers {

// A JSON number read as an integer: truncated toward zero; NaN and values no int64 holds (an id of
// 4e87 in a hostile trace) give the fallback, as a non-number does.
static int64_t whole_i64(double d, int64_t fallback) {
  if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) return fallback;
  return static_cast<int64_t>(d);
}


#ifdef KILN_HAVE_SIMDJSON
using Element = simdjson::dom::element;
#else
// Keys in the document's order, as simdjson keeps them: dump() writes the same text either way.
using Json = nlohmann::ordered_json;
using Element = const Json*;
#endif
static_assert(sizeof(Element) <= 24, "JsonValue::raw_ too small for the backend handle");

struct JsonAccess {
  static JsonValue make(const Element& e) {
    JsonValue v;
#ifdef KILN_HAVE_SIMDJSON
    using T = simdjson::dom::element_type;
    switch (e.type()) {
      case T::OBJECT: v.kind_ = JsonValue::Kind::Object; break;
      case T::ARRAY: v.kind_ = JsonValue::Kind::Array; break;
      case T::STRING: v.kind_ = JsonValue::Kind::String; break;
      case T::INT64:
      case T::UINT64:
      case T::DOUBLE: v.kind_ = JsonValue::Kind::Number; break;
      case T::BOOL: v.kind_ = JsonValue::Kind::Bool; break;
      case T::NULL_VALUE: v.kind_ = JsonValue::Kind::Null; break;
    }
#else
    if (e->is_object()) v.kind_ = JsonValue::Kind::Object;
    else if (e->is_array()) v.kind_ = JsonValue::Kind::Array;
    else if (e->is_string()) v.kind_ = JsonValue::Kind::String;
    else if (e->is_number()) v.kind_ = JsonValue::Kind::Number;
    else if (e->is_boolean()) v.kind_ = JsonValue::Kind::Bool;
    else v.kind_ = JsonValue::Kind::Null;
#endif
    new (v.raw_) Element(e);
    return v;
  }
  static const Element& get(const JsonValue& v) { return *reinterpret_cast<const Element*>(v.raw_); }
};

#ifdef KILN_HAVE_SIMDJSON

std::string_view JsonValue::str(std::string_view fallback) const {
  if (kind_ != Kind::String) return fallback;
  std::string_view s;
  return JsonAccess::get(*this).get_string().get(s) ? fallback : s;
}

int64_t JsonValue::i64(int64_t fallback) const {
  if (kind_ != Kind::Number) return fallback;
  const auto& e = JsonAccess::get(*this);
  int64_t i;
  if (!e.get_int64().get(i)) return i;
  uint64_t u;
  if (!e.get_uint64().get(u)) return static_cast<int64_t>(u);
  double d;
  if (!e.get_double().get(d)) return whole_i64(d, fallback);
  return fallback;
}

double JsonValue::f64(double fallback) const {
  if (kind_ != Kind::Number) return fallback;
  const auto& e = JsonAccess::get(*this);
  double d;
  if (!e.get_double().get(d)) return d;
  int64_t i;
  if (!e.get_int64().get(i)) return static_cast<double>(i);
  uint64_t u;
  if (!e.get_uint64().get(u)) return static_cast<double>(u);
  return fallback;
}

bool JsonValue::boolean(bool fallback) const {
  if (kind_ != Kind::Bool) return fallback;
  bool b;
  return JsonAccess::get(*this).get_bool().get(b) ? fallback : b;
}

JsonValue JsonValue::operator[](std::string_view key) const {
  if (kind_ != Kind::Object) return {};
  simdjson::dom::element child;
  if (JsonAccess::get(*this).get_object().at_key(key).get(child)) return {};
  return JsonAccess::make(child);
}

size_t JsonValue::size() const {
  const auto& e = JsonAccess::get(*this);
  simdjson::dom::array a;
  simdjson::dom::object o;
  if (kind_ == Kind::Array && !e.get_array().get(a)) return a.size();
  if (kind_ == Kind::Object && !e.get_object().get(o)) return o.size();
  return 0;
}

void JsonValue::each_field(const std::function<void(std::string_view, const JsonValue&)>& f) const {
  if (kind_ != Kind::Object) return;
  simdjson::dom::object o;
  if (JsonAccess::get(*this).get_object().get(o)) return;
  for (auto field : o) f(field.key, JsonAccess::make(field.value));
}

void JsonValue::each_element(const std::function<void(const JsonValue&)>& f) const {
  if (kind_ != Kind::Array) return;
  simdjson::dom::array a;
  if (JsonAccess::get(*this).get_array().get(a)) return;
  for (auto e : a) f(JsonAccess::make(e));
}

namespace {

// simdjson::minify's text, written without its slow path (it appends byte by byte once a string
// holds one character to escape: the newlines of code in Inductor's cache-key components). The
// same escapes, number forms (its own double formatting) and layout.
void append_json(std::string& out, const simdjson::dom::element& e) {
  using T = simdjson::dom::element_type;
  char number[32];
  switch (e.type()) {
    case T::OBJECT: {
      out += '{';
      bool first = true;
      simdjson::dom::object o;
      if (e.get_object().get(o)) break;
      for (auto field : o) {
        if (!first) out += ',';
        first = false;
        append_json_escaped(out, field.key);
        out += ':';
        append_json(out, field.value);
      }
      out += '}';
      break;
    }
    case T::ARRAY: {
      out += '[';
      bool first = true;
      simdjson::dom::array a;
      if (e.get_array().get(a)) break;
      for (auto v : a) {
        if (!first) out += ',';
        first = false;
        append_json(out, v);
      }
      out += ']';
      break;
    }
    case T::STRING: append_json_escaped(out, e.get_string().value_unsafe()); break;
    case T::INT64:
      out.append(number, std::to_chars(number, number + sizeof number, e.get_int64().value_unsafe()).ptr);
      break;
    case T::UINT64:
      out.append(number, std::to_chars(number, number + sizeof number, e.get_uint64().value_unsafe()).ptr);
      break;
    case T::DOUBLE: out.append(number, simdjson::internal::to_chars(number, nullptr, e.get_double().value_unsafe())); break;
    case T::BOOL: out += e.get_bool().value_unsafe() ? "true" : "false"; break;
    case T::NULL_VALUE: out += "null"; break;
  }
}

}  // namespace

std::string JsonValue::dump() const {
  if (kind_ == Kind::Missing) return "";
  std::string out;
  append_json(out, JsonAccess::get(*this));
  return out;
}

// Buffers a parser keeps between documents; larger ones are released after use.
constexpr size_t kKeptBytes = size_t(64) << 20;

struct JsonParser::Impl {
  simdjson::dom::parser parser;
  std::vector<char> padded;
};

JsonParser::JsonParser() : impl_(std::make_unique<Impl>()) {}
JsonParser::~JsonParser() = default;

bool JsonParser::parse(std::string_view text, JsonValue& root, std::string* error) {
  root = JsonValue();
  // What one large document made the parser allocate is given back before the next one: the
  // importers' memory follows the document at hand, not the largest seen.
  if (impl_->padded.size() > kKeptBytes || impl_->parser.capacity() > kKeptBytes) impl_ = std::make_unique<Impl>();
  auto& buf = impl_->padded;
  simdjson::error_code err = simdjson::SUCCESS;
  simdjson::dom::element e;
  try {
    if (buf.size() < text.size() + simdjson::SIMDJSON_PADDING) buf.resize(text.size() + simdjson::SIMDJSON_PADDING);
    if (!text.empty()) std::memcpy(buf.data(), text.data(), text.size());
    std::memset(buf.data() + text.size(), 0, simdjson::SIMDJSON_PADDING);
    err = impl_->parser.parse(reinterpret_cast<const uint8_t*>(buf.data()), text.size(), false).get(e);
  } catch (const std::bad_alloc&) {
    err = simdjson::MEMALLOC;
  }
  if (err == simdjson::MEMALLOC) {
    // A parser whose allocation failed is not used again: a fresh one (small) takes its place.
    impl_.reset();
    impl_ = std::make_unique<Impl>();
    if (error) *error = "not enough memory to parse " + std::to_string(text.size()) + " bytes of JSON";
    return false;
  }
  if (err) {
    if (error) *error = simdjson::error_message(err);
    return false;
  }
  root = JsonAccess::make(e);
  return true;
}

#else  // nlohmann::json

std::string_view JsonValue::str(std::string_view fallback) const {
  if (kind_ != Kind::String) return fallback;
  return JsonAccess::get(*this)->get_ref<const std::string&>();
}

int64_t JsonValue::i64(int64_t fallback) const {
  if (kind_ != Kind::Number) return fallback;
  const auto* j = JsonAccess::get(*this);
  if (j->is_number_float()) return whole_i64(j->get<double>(), fallback);
  if (j->is_number_unsigned()) return static_cast<int64_t>(j->get<uint64_t>());
  return j->get<int64_t>();
}

double JsonValue::f64(double fallback) const {
  if (kind_ != Kind::Number) return fallback;
  return JsonAccess::get(*this)->get<double>();
}

bool JsonValue::boolean(bool fallback) const {
  if (kind_ != Kind::Bool) return fallback;
  return JsonAccess::get(*this)->get<bool>();
}

JsonValue JsonValue::operator[](std::string_view key) const {
  if (kind_ != Kind::Object) return {};
  const auto* j = JsonAccess::get(*this);
  auto it = j->find(std::string(key));
  if (it == j->end()) return {};
  return JsonAccess::make(&*it);
}

size_t JsonValue::size() const {
  if (kind_ != Kind::Array && kind_ != Kind::Object) return 0;
  return JsonAccess::get(*this)->size();
}

void JsonValue::each_field(const std::function<void(std::string_view, const JsonValue&)>& f) const {
  if (kind_ != Kind::Object) return;
  for (auto it = JsonAccess::get(*this)->begin(); it != JsonAccess::get(*this)->end(); ++it)
    f(it.key(), JsonAccess::make(&it.value()));
}

void JsonValue::each_element(const std::function<void(const JsonValue&)>& f) const {
  if (kind_ != Kind::Array) return;
  for (const auto& e : *JsonAccess::get(*this)) f(JsonAccess::make(&e));
}

std::string JsonValue::dump() const {
  if (kind_ == Kind::Missing) return "";
  return JsonAccess::get(*this)->dump(-1, ' ', false, Json::error_handler_t::replace);
}

struct JsonParser::Impl {
  Json doc;
  std::vector<std::vector<std::string>> keys;  // per open object, the keys read so far
};

JsonParser::JsonParser() : impl_(std::make_unique<Impl>()) {}
JsonParser::~JsonParser() = default;

bool JsonParser::parse(std::string_view text, JsonValue& root, std::string* error) {
  try {
    // A key repeated in one object keeps its first value, as simdjson's lookups do (objects are
    // small: a linear search of the keys read so far).
    auto& keys = impl_->keys;
    keys.clear();
    Json::parser_callback_t first_wins = [&keys](int, Json::parse_event_t event, Json& parsed) {
      if (event == Json::parse_event_t::object_start) keys.emplace_back();
      else if (event == Json::parse_event_t::object_end && !keys.empty()) keys.pop_back();
      else if (event == Json::parse_event_t::key && !keys.empty()) {
        const auto& key = parsed.get_ref<const std::string&>();
        auto& seen = keys.back();
        if (std::find(seen.begin(), seen.end(), key) != seen.end()) return false;
        seen.push_back(key);
      }
      return true;
    };
    impl_->doc = Json::parse(text.begin(), text.end(), first_wins, false);
  } catch (const std::bad_alloc&) {
    impl_->doc = nullptr;
    if (error) *error = "not enough memory to parse " + std::to_string(text.size()) + " bytes of JSON";
    root = JsonValue();
    return false;
  }
  if (impl_->doc.is_discarded()) {
    if (error) *error = "malformed JSON";
    root = JsonValue();
    return false;
  }
  root = JsonAccess::make(&impl_->doc);
  return true;
}

#endif

std::string JsonValue::text() const {
  if (kind_ == Kind::String) return std::string(str());
  return dump();
}

int64_t us_to_ns(double us) {
  if (!(us > -9.2e15 && us < 9.2e15)) return 0;  // NaN or out of range
  double whole = std::floor(us);
  return static_cast<int64_t>(whole) * 1000 + static_cast<int64_t>(std::llround((us - whole) * 1000.0));
}

#ifdef KILN_HAVE_SIMDJSON
void append_dumped_double(std::string& out, double d) {
  char number[32];
  out.append(number, simdjson::internal::to_chars(number, nullptr, d));
}
bool json_backend_is_simdjson() { return true; }
#else
void append_dumped_double(std::string& out, double d) { out += nlohmann::json(d).dump(); }
bool json_backend_is_simdjson() { return false; }
#endif

std::string json_quote(std::string_view s) { return quoted_literal(s, LiteralStyle::Json); }

}  // namespace kiln::importers
