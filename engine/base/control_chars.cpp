#include "engine/base/control_chars.h"

#include <cstdio>

namespace kiln {

namespace {

void escape_byte(unsigned char c, std::string& out) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "\\x%02x", c);
  out += buf;
}

void escape_c1(unsigned char second, std::string& out) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "\\u%04x", second);
  out += buf;
}

}  // namespace

void ControlCharEscaper::feed(const char* data, size_t size, std::string& out) {
  size_t i = 0;
  if (pending_c2_ && size > 0) {
    pending_c2_ = false;
    auto c = static_cast<unsigned char>(data[0]);
    if (c >= 0x80 && c <= 0x9F) {
      escape_c1(c, out);
      i = 1;
    } else {
      out += '\xC2';
    }
  }
  size_t run = i;  // start of the bytes copied as they are
  for (; i < size; ++i) {
    auto c = static_cast<unsigned char>(data[i]);
    bool control = (c < 0x20 && c != '\t' && c != '\n') || c == 0x7F;
    bool c2 = c == 0xC2;
    if (!control && !c2) continue;
    out.append(data + run, i - run);
    if (control) {
      escape_byte(c, out);
    } else if (i + 1 == size) {
      pending_c2_ = true;
    } else {
      auto next = static_cast<unsigned char>(data[i + 1]);
      if (next >= 0x80 && next <= 0x9F) {
        escape_c1(next, out);
        ++i;
      } else {
        out += '\xC2';
      }
    }
    run = i + 1;
  }
  if (run < size) out.append(data + run, size - run);
}

void ControlCharEscaper::finish(std::string& out) {
  if (pending_c2_) out += '\xC2';
  pending_c2_ = false;
}

std::string visible_controls(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  ControlCharEscaper e;
  e.feed(text.data(), text.size(), out);
  e.finish(out);
  return out;
}

}  // namespace kiln
