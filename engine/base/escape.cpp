#include "engine/base/escape.h"

#include <cstdio>

namespace kiln {

std::string replace_chars(std::string_view text, CharReplacement replace) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  for (char c : text) {
    if (const char* r = replace(static_cast<unsigned char>(c))) out += r;
    else out += c;
  }
  return out;
}

std::string quoted_literal(std::string_view text, LiteralStyle style) {
  std::string out;
  out.reserve(text.size() + 2);
  out += '"';
  for (char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"') out += "\\\"";
    else if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || (c == 0x7f && style == LiteralStyle::Python)) {
      char buf[8];
      std::snprintf(buf, sizeof buf, style == LiteralStyle::Json ? "\\u%04x" : "\\x%02x", c);
      out += buf;
    } else {
      out += ch;
    }
  }
  out += '"';
  return out;
}

}  // namespace kiln
