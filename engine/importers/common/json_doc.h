// The importers' one JSON adapter: a read-only view of a parsed document, backed by simdjson's DOM
// when Kiln is built with it (KILN_HAVE_SIMDJSON) and by nlohmann::json otherwise. Importers see
// plain values only; neither library's types leave json_doc.cpp.
//
// JsonParser::parse(text, root)
//   post: true and `root` views the document, valid until this parser parses again (JsonValues
//         taken from it too); false on malformed JSON, with a one-line reason in *error.
// JsonValue: a missing key or a wrong type gives the fallback, never an exception. Both backends keep
// an object's fields in the document's order and look a repeated key up as its first value (dump()
// of an object holding a repeated key differs: simdjson writes both, nlohmann the first).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "engine/base/non_copyable.h"

namespace kiln::importers {

class JsonValue {
 public:
  JsonValue() = default;
  bool exists() const { return kind_ != Kind::Missing; }
  bool is_null() const { return kind_ == Kind::Null; }
  bool is_object() const { return kind_ == Kind::Object; }
  bool is_array() const { return kind_ == Kind::Array; }
  bool is_string() const { return kind_ == Kind::String; }
  bool is_number() const { return kind_ == Kind::Number; }
  bool is_bool() const { return kind_ == Kind::Bool; }

  std::string_view str(std::string_view fallback = {}) const;  // strings only
  int64_t i64(int64_t fallback = 0) const;                     // numbers (doubles truncate)
  double f64(double fallback = 0) const;                       // numbers
  bool boolean(bool fallback = false) const;

  JsonValue operator[](std::string_view key) const;  // objects; Missing otherwise
  size_t size() const;                               // elements or fields; 0 for scalars
  void each_field(const std::function<void(std::string_view, const JsonValue&)>& f) const;
  void each_element(const std::function<void(const JsonValue&)>& f) const;

  std::string dump() const;  // minified JSON ("" when missing)
  void dump_to(std::string& out) const;  // appends dump(): a reused `out` spares its growth
  std::string text() const;  // a string's value; other values as dump()

 private:
  friend class JsonParser;
  friend struct JsonAccess;
  enum class Kind : uint8_t { Missing, Null, Bool, Number, String, Array, Object };
  Kind kind_ = Kind::Missing;
  alignas(void*) unsigned char raw_[24] = {};  // the backend's element handle
};

class JsonParser : NonCopyable {
 public:
  JsonParser();
  ~JsonParser();
  bool parse(std::string_view text, JsonValue& root, std::string* error = nullptr);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Microseconds (as Chrome traces write "ts", possibly fractional) → integer nanoseconds, exact for
// epoch timestamps (a double holds them to 1/4 µs; multiplying first would round to 256 ns).
int64_t us_to_ns(double us);

// A JSON number read as an integer: truncated toward zero; NaN and values no int64 holds (an id of
// 4e87 in a hostile trace) give the fallback, as a non-number does.
inline int64_t whole_i64(double d, int64_t fallback) {
  if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) return fallback;
  return static_cast<int64_t>(d);
}

// Appends `d` as JsonValue::dump() writes a number parsed as a double.
void append_dumped_double(std::string& out, double d);

// True when JsonValue::dump() is simdjson's (the backend ChromeEvent reproduces).
bool json_backend_is_simdjson();

// "a\"b" → a JSON string literal with quotes, for building small JSON texts by hand.
std::string json_quote(std::string_view s);

}  // namespace kiln::importers
