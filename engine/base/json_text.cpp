#include "engine/base/json_text.h"

#include <nlohmann/json.hpp>

namespace kiln {

// ASCII is escaped here as nlohmann escapes it (DEL as it is); a string holding any other byte is
// left to nlohmann, whose UTF-8 check and repair it then gets (graphs, guards and names are ASCII
// nearly always: escaping them through a json value was a twentieth of a large log's import).
void append_json_string(std::string& out, std::string_view s) {
  const size_t mark = out.size();
  out += '"';
  size_t plain = 0;  // start of the run not yet written
  for (size_t i = json_plain_run_end(s, 0, true); i < s.size(); i = json_plain_run_end(s, i + 1, true)) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      out.resize(mark);
      out += nlohmann::json(std::string(s)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      return;
    }
    out.append(s.substr(plain, i - plain));
    plain = i + 1;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default: {
        static const char hex[] = "0123456789abcdef";
        out += "\\u00";
        out += hex[c >> 4];
        out += hex[c & 15];
      }
    }
  }
  out.append(s.substr(plain));
  out += '"';
}

int text_nesting_depth(std::string_view text, int limit) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '[' || c == '{') {
      if (++depth > deepest) deepest = depth;
      if (deepest > limit) return limit + 1;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

}  // namespace kiln
