// FlatEvent: the members of one Chrome trace event that the Kineto importer looks at, read in one
// pass over the event's text with no tree built: the top-level members ph, cat, name, pid, tid, ts,
// dur, id and args, and of args the members device, stream, correlation, "External id", grid,
// block, "registers per thread", "shared memory" and "Total Allocated". Everything else is
// checked (the event must be JSON) and skipped. A profiler trace holds a million such events, and
// building a node for each of their values was most of a large import's reading.
//
// FlatEventReader::read(text, &event)
//   post: the length of the event object text starts with ('{' first) when it was read: every
//         member named above filled (the first of a repeated name, as EventValue::operator[] and
//         JsonValue give it), each FlatValue answering as ChromeEvent's EventValue would for the
//         same text (str/i64/f64 and their fallbacks, size(), dump(), dumped(): containers as their
//         minified text, byte for byte JsonValue::dump()). 0 when the event is outside the subset
//         ChromeEvent reads (escapes, non-ASCII, nesting deeper than 32, integers over 18 digits), when
//         a double in args would be written differently by dump() than it is in the text, or when
//         text ends inside the event: the caller then hands it to ChromeEvent or JsonParser. The
//         views stay valid while text does and until the next read().
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace kiln::importers {

class FlatValue {
 public:
  bool exists() const { return kind_ != Kind::None; }
  bool is_null() const { return kind_ == Kind::Null; }
  bool is_object() const { return kind_ == Kind::Object; }
  bool is_array() const { return kind_ == Kind::Array; }
  bool is_string() const { return kind_ == Kind::String; }
  bool is_number() const { return kind_ == Kind::Int || kind_ == Kind::Double; }
  bool is_bool() const { return kind_ == Kind::Bool; }
  std::string_view str(std::string_view fallback = {}) const { return is_string() ? text_ : fallback; }
  int64_t i64(int64_t fallback = 0) const;
  double f64(double fallback = 0) const;
  size_t size() const { return is_object() || is_array() ? count_ : 0; }
  std::string dump() const;
  std::string_view dumped() const { return is_object() || is_array() ? text_ : std::string_view(); }

 private:
  friend class FlatEventReader;
  enum class Kind : uint8_t { None, Null, Bool, Int, Double, String, Array, Object };
  Kind kind_ = Kind::None;
  uint32_t count_ = 0;
  std::string_view text_;  // a string's contents, a number's or literal's text, a container's minified text
  int64_t i_ = 0;
  double d_ = 0;
};

struct FlatEvent {
  FlatValue ph, cat, name, pid, tid, ts, dur, id, args;
  // members of args
  FlatValue device, stream, correlation, external_id, grid, block, registers, shared, allocated;
};

// Every member FlatEvent holds, with its name in the event (in_args: a member of its args object),
// for code that visits them all (its tests and fuzzer compare each with ChromeEvent's answer).
struct FlatMember {
  const char* name;
  bool in_args;
  FlatValue FlatEvent::*value;
};
inline constexpr FlatMember kFlatMembers[] = {
    {"ph", false, &FlatEvent::ph},
    {"cat", false, &FlatEvent::cat},
    {"name", false, &FlatEvent::name},
    {"pid", false, &FlatEvent::pid},
    {"tid", false, &FlatEvent::tid},
    {"ts", false, &FlatEvent::ts},
    {"dur", false, &FlatEvent::dur},
    {"id", false, &FlatEvent::id},
    {"args", false, &FlatEvent::args},
    {"device", true, &FlatEvent::device},
    {"stream", true, &FlatEvent::stream},
    {"correlation", true, &FlatEvent::correlation},
    {"External id", true, &FlatEvent::external_id},
    {"grid", true, &FlatEvent::grid},
    {"block", true, &FlatEvent::block},
    {"registers per thread", true, &FlatEvent::registers},
    {"shared memory", true, &FlatEvent::shared},
    {"Total Allocated", true, &FlatEvent::allocated},
};

class FlatEventReader {
 public:
  FlatEventReader();
  size_t read(std::string_view text, FlatEvent* event);

 private:
  bool value(const char*& p, const char* end, int depth, FlatValue* slot);
  bool container(const char*& p, const char* end, int depth, FlatValue* slot, bool is_args);
  void skip(const char*& p, const char* end) {  // white space; noted, as a container that had some is minified
    const char* s = p;
    while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) ++p;
    spaced_ = spaced_ || p != s;
  }
  FlatEvent* args_of_ = nullptr;  // the event whose args members are being read
  bool spaced_ = false;
  std::string minified_;  // containers written with white space, minified (patched into their views)
  std::string number_;    // a double as dump() writes it, compared with its text
  struct Patch {
    FlatValue* slot;
    size_t at, size;
  };
  Patch patches_[8];
  int patch_count_ = 0;
  bool enabled_;
};

}  // namespace kiln::importers
