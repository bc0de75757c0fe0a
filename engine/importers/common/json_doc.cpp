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
  std::string out;
  dump_to(out);
  return out;
}

void JsonValue::dump_to(std::string& out) const {
  if (kind_ != Kind::Missing) append_json(out, JsonAccess::get(*this));
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

void JsonValue::dump_to(std::string& out) const { out += dump(); }

namespace {

// Builds the document from the parser's events, so that running out of memory ends the parse with
// `false` instead of an exception through nlohmann's parser: unwinding there destroys the partial
// document, and Json's destructor allocates (it moves a container's children to a stack), which
// fails again and ends the process. A key repeated in one object keeps its first value, as
// simdjson's lookups do (objects are small: a linear search of the keys read so far).
class DomBuilder {
 public:
  DomBuilder(Json& root, std::vector<Json*>& open, std::vector<std::vector<std::string>>& keys)
      : root_(root), open_(open), keys_(keys) {
    open_.clear();
    keys_.clear();
  }
  bool null() { return add(nullptr); }
  bool boolean(bool v) { return add(v); }
  bool number_integer(Json::number_integer_t v) { return add(v); }
  bool number_unsigned(Json::number_unsigned_t v) { return add(v); }
  bool number_float(Json::number_float_t v, const std::string&) { return add(v); }
  bool string(std::string& v) { return add(std::move(v)); }
  bool binary(Json::binary_t&) { return add(nullptr); }  // JSON text holds none
  bool start_object(std::size_t) { return start(Json::object()); }
  bool start_array(std::size_t) { return start(Json::array()); }
  bool end_object() { return end(true); }
  bool end_array() { return end(false); }
  bool key(std::string& k) {
    if (skipping_) return true;
    return guarded([&] {
      auto& seen = keys_.back();
      if (std::find(seen.begin(), seen.end(), k) != seen.end()) {
        skipping_ = 1;  // the value after it, whole, is not kept
        skip_depth_ = 0;
        return;
      }
      seen.push_back(k);
      key_ = std::move(k);
    });
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) {
    malformed_ = true;
    return false;
  }
  bool out_of_memory() const { return out_of_memory_; }
  bool malformed() const { return malformed_; }

 private:
  template <typename F>
  bool guarded(F&& f) {
    try {
      f();
      return true;
    } catch (const std::bad_alloc&) {
      out_of_memory_ = true;
      return false;
    }
  }
  // A value skipped for a repeated key: scalars at its depth end it, containers when they close.
  bool skipped_scalar() {
    if (!skipping_) return false;
    if (skip_depth_ == 0) skipping_ = 0;
    return true;
  }
  bool add(Json v) {
    if (skipped_scalar()) return true;
    return guarded([&] { place(std::move(v)); });
  }
  Json* place(Json v) {
    if (open_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    Json& parent = *open_.back();
    if (parent.is_array()) {
      auto& a = parent.get_ref<Json::array_t&>();
      a.push_back(std::move(v));
      return &a.back();
    }
    auto& o = parent.get_ref<Json::object_t&>();
    o.emplace_back(std::move(key_), std::move(v));
    return &o.back().second;
  }
  bool start(Json container) {
    if (skipping_) {
      ++skip_depth_;
      return true;
    }
    const bool object = container.is_object();
    return guarded([&] {
      open_.reserve(open_.size() + 1);
      if (object) keys_.emplace_back();
      Json* placed = place(std::move(container));
      open_.push_back(placed);
    });
  }
  bool end(bool object) {
    if (skipping_) {
      if (--skip_depth_ == 0) skipping_ = 0;
      return true;
    }
    open_.pop_back();
    if (object) keys_.pop_back();
    return true;
  }
  Json& root_;
  std::vector<Json*>& open_;  // the containers being read, outermost first
  std::vector<std::vector<std::string>>& keys_;
  std::string key_;
  int skipping_ = 0;
  size_t skip_depth_ = 0;
  bool out_of_memory_ = false, malformed_ = false;
};

// Empties v without allocating: removes the last leaf until none is left, its path kept in `path`,
// whose capacity (the deepest nesting the parse opened) it never exceeds.
void dismantle(Json& v, std::vector<Json*>& path) {
  path.clear();
  if (v.is_structured()) path.push_back(&v);
  while (!path.empty()) {
    Json& node = *path.back();
    if (node.empty()) {
      path.pop_back();
      continue;
    }
    Json& last = node.is_array() ? node.get_ref<Json::array_t&>().back() : node.get_ref<Json::object_t&>().back().second;
    if (last.is_structured() && !last.empty() && path.size() < path.capacity()) {
      path.push_back(&last);
      continue;
    }
    if (node.is_array()) node.get_ref<Json::array_t&>().pop_back();
    else node.get_ref<Json::object_t&>().pop_back();
  }
  v = nullptr;
}

}  // namespace

struct JsonParser::Impl {
  Json doc;
  std::vector<Json*> open;                       // the parse's open containers; the dismantling's path
  std::vector<std::vector<std::string>> keys;    // per open object, the keys read so far
};

JsonParser::JsonParser() : impl_(std::make_unique<Impl>()) {}
JsonParser::~JsonParser() = default;

bool JsonParser::parse(std::string_view text, JsonValue& root, std::string* error) {
  dismantle(impl_->doc, impl_->open);
  bool parsed = false, out_of_memory = false;
  try {
    DomBuilder builder(impl_->doc, impl_->open, impl_->keys);
    parsed = Json::sax_parse(text.begin(), text.end(), &builder);
    out_of_memory = builder.out_of_memory();
  } catch (const std::bad_alloc&) {  // in the parser itself (its token buffer)
    out_of_memory = true;
  }
  if (out_of_memory || !parsed) {
    dismantle(impl_->doc, impl_->open);
    if (error)
      *error = out_of_memory ? "not enough memory to parse " + std::to_string(text.size()) + " bytes of JSON"
                             : "malformed JSON";
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
