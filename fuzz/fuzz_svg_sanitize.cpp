// libFuzzer target: the SVG whitelist sanitizer on arbitrary markup. Findings besides crashes: a
// tag in the output outside the whitelist or carrying an active attribute (href, on*, a URL that
// is not a fragment), a raw '<' outside a tag, and output that changes when sanitized again.
#include <algorithm>
#include <cctype>
#include <set>
#include <string>

#include "engine/report/svg_sanitize.h"

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// The value as a browser reads it (quotes decoded, spaces ignored): only url(#fragment) references.
bool value_is_inert(const std::string& escaped) {
  std::string v;
  for (size_t i = 0; i < escaped.size(); ++i) {
    if (escaped.compare(i, 6, "&quot;") == 0) v += '"', i += 5;
    else if (escaped.compare(i, 5, "&#39;") == 0) v += '\'', i += 4;
    else if (!std::isspace(static_cast<unsigned char>(escaped[i]))) v += static_cast<char>(std::tolower(static_cast<unsigned char>(escaped[i])));
  }
  if (v.find("javascript:") != std::string::npos) return false;
  for (size_t at = v.find("url("); at != std::string::npos; at = v.find("url(", at + 4)) {
    size_t start = at + 4;
    if (start < v.size() && (v[start] == '"' || v[start] == '\'')) ++start;
    if (start >= v.size() || v[start] != '#') return false;
  }
  return true;
}

// "<name a="v" b="v">", "<name .../>" or "</name>": a whitelisted element whose attributes are neither
// links, event handlers nor styles, with values that reference nothing outside the document.
bool tag_is_inert(const std::string& tag) {
  static const std::set<std::string> kept = {"svg",      "g",    "title", "desc", "path", "polygon", "polyline",
                                             "ellipse",  "circle", "rect", "line", "text", "tspan", "defs",
                                             "lineargradient", "radialgradient", "stop"};
  size_t i = tag[1] == '/' ? 2 : 1, j = i;
  while (j < tag.size() && std::isalnum(static_cast<unsigned char>(tag[j]))) ++j;
  if (!kept.count(lower(tag.substr(i, j - i)))) return false;
  while (j < tag.size()) {
    while (j < tag.size() && (tag[j] == ' ' || tag[j] == '/' || tag[j] == '>')) ++j;
    if (j >= tag.size()) break;
    size_t eq = tag.find('=', j);
    if (eq == std::string::npos || eq + 1 >= tag.size() || tag[eq + 1] != '"') return false;
    std::string name = lower(tag.substr(j, eq - j));
    size_t close = tag.find('"', eq + 2);
    if (close == std::string::npos) return false;
    std::string value = tag.substr(eq + 2, close - eq - 2);
    if (name.rfind("on", 0) == 0 || name.find("href") != std::string::npos || name == "style" ||
        (name.find(':') != std::string::npos && name != "xml:space"))
      return false;
    if (!value_is_inert(value)) return false;
    j = close + 1;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string in(reinterpret_cast<const char*>(data), size);
  std::string out = kiln::report::sanitize_svg(in);
  for (size_t at = out.find('<'); at != std::string::npos; at = out.find('<', at + 1)) {
    size_t end = out.find('>', at);
    if (end == std::string::npos) __builtin_trap();  // an unclosed tag
    if (!tag_is_inert(out.substr(at, end - at + 1))) __builtin_trap();
    at = end;
  }
  if (kiln::report::sanitize_svg(out) != out) __builtin_trap();  // sanitizing is idempotent
  return 0;
}
