// ChromeEvent: one Chrome trace event object read in a single pass, without a general JSON
// parser: Kineto writes millions of small, plain events, and most of the import's time went into
// building a document for each and writing its "args" back as text.
//
// read(text)
//   post: the root's node (>= 0) when text is one JSON object within the subset read here: ASCII
//         strings without escapes, numbers that are plain integers (up to 18 digits) or finite
//         doubles, nesting up to 32 levels, nothing after the object; value(root) then views it until
//         clear(). Events read one after another stay readable together (text must stay valid and
//         unmoved as long). -1 for anything else (valid JSON outside the subset, or invalid JSON):
//         the caller parses that text with JsonParser, which also tells the two apart.
// read_prefix(text, &length)
//   post: as read(), for the one object text starts with ('{' first, no white space before it);
//         what follows it is not looked at. length is the object's length in bytes. -1 also when
//         text ends inside the object.
// EventValue mirrors JsonValue (json_doc.h) for what the importer asks of an event, with the same
// results for every text read() accepts: str/i64/f64 and their fallbacks, operator[] (first member
// of that name), size(), and dump() — byte for byte the text JsonValue::dump() gives (for every
// value but the root object itself, whose dump() is "").
// Accepted only when Kiln's JSON backend is simdjson (whose dump() it reproduces); read() is always
// -1 otherwise.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::importers {

class ChromeEvent;

class EventValue {
 public:
  EventValue() = default;
  bool exists() const { return node_ >= 0; }
  bool is_null() const;
  bool is_object() const;
  bool is_array() const;
  bool is_string() const;
  bool is_number() const;
  bool is_bool() const;
  std::string_view str(std::string_view fallback = {}) const;
  int64_t i64(int64_t fallback = 0) const;
  double f64(double fallback = 0) const;
  EventValue operator[](std::string_view key) const;
  size_t size() const;
  std::string dump() const;
  // dump()'s text of an object or array below the root, where it lies (valid until clear()); empty
  // for anything else.
  std::string_view dumped() const;
  // f(key, value) for each member of an object in order (nothing for other values), as
  // JsonValue::each_field.
  template <typename F>
  void each_member(F&& f) const;

 private:
  friend class ChromeEvent;
  EventValue(const ChromeEvent* doc, int32_t node) : doc_(doc), node_(node) {}
  const ChromeEvent* doc_ = nullptr;
  int32_t node_ = -1;
};

class ChromeEvent {
 public:
  int32_t read(std::string_view text);
  int32_t read_prefix(std::string_view text, size_t* length);
  EventValue value(int32_t node) const { return EventValue(this, node); }
  void clear() {
    nodes_.clear();
    dumped_.clear();
  }

 private:
  friend class EventValue;
  enum class Kind : uint8_t { Null, Bool, Int, Double, String, Array, Object };
  struct Node {
    Kind kind = Kind::Null;
    bool truth = false;
    bool emitted = false;   // written to dumped_ (containers below a root)
    std::string_view key;   // the member name (object members only)
    std::string_view text;  // string contents, or a number's or literal's text
    int64_t i = 0;
    double d = 0;
    uint32_t dump_begin = 0, dump_end = 0;  // containers below the root: their text in dumped_
    int32_t first_child = -1, next = -1;
    uint32_t count = 0;
  };
  int32_t value(const char*& p, const char* end, int depth, bool emit);
  void emit_scalar(const Node& n);
  std::vector<Node> nodes_;
  std::string dumped_;  // the minified text of every container below a root
};

template <typename F>
void EventValue::each_member(F&& f) const {
  if (!is_object()) return;
  for (int32_t c = doc_->nodes_[node_].first_child; c >= 0; c = doc_->nodes_[c].next)
    f(doc_->nodes_[c].key, EventValue(doc_, c));
}

}  // namespace kiln::importers
