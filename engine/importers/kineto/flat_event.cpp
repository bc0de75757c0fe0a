// One recursive descent over the event, with ChromeEvent's subset and its string and number rules
// (event_scalars.h), so that an event is read here exactly when ChromeEvent would read it (or,
// for a double in args that dump() would rewrite, handed to ChromeEvent, which rewrites it).
// Containers are not copied: one written without white space is its own dump(); one with white
// space (Kineto's own files indent every event) is minified once, when the event has been read.
#include "engine/importers/kineto/flat_event.h"

#include <cstring>

#include "engine/importers/common/json_doc.h"
#include "engine/importers/kineto/event_scalars.h"

namespace kiln::importers {

namespace {


inline bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }
inline bool is_digit(char c) { return c >= '0' && c <= '9'; }

// k == lit, its length known here: compared in place rather than by a library call per member.
template <size_t N>
inline bool is(std::string_view k, const char (&lit)[N]) {
  return k.size() == N - 1 && std::memcmp(k.data(), lit, N - 1) == 0;
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
  if (kind_ == Kind::Double) return whole_i64(d_, fallback);
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
    return scan_plain_string(p, end, &v.text_);
  }
  if (c == '-' || is_digit(c)) {
    ScannedNumber number;
    if (!scan_number(p, end, &number)) return false;
    v.text_ = number.text;
    v.kind_ = number.is_double ? FlatValue::Kind::Double : FlatValue::Kind::Int;
    v.d_ = number.d;
    v.i_ = number.i;
    // Inside a container its text is part of that container's dump(), which writes doubles its own way.
    if (number.is_double && depth >= 2) {
      number_.clear();
      append_dumped_double(number_, v.d_);
      if (number_ != v.text_) return false;
    }
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
  if (depth >= kMaxEventDepth) return false;
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
        if (p >= end || *p != '"' || !scan_plain_string(p, end, &k)) return false;
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
  for (const FlatMember& m : kFlatMembers) (ev->*m.value).kind_ = FlatValue::Kind::None;
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
      if (p >= end || *p != '"' || !scan_plain_string(p, end, &k)) return 0;
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
