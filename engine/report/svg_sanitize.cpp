// SVG whitelist sanitizer; see svg_sanitize.h.
#include "engine/report/svg_sanitize.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <vector>

#include "engine/report/html_text.h"

namespace kiln::report {

namespace {

const std::set<std::string>& kept_elements() {
  static const std::set<std::string> s = {"svg",  "g",    "title", "desc",           "path",           "polygon",
                                          "polyline", "ellipse", "circle", "rect",  "line",           "text",
                                          "tspan", "defs", "linearGradient", "radialGradient", "stop"};
  return s;
}

const std::set<std::string>& kept_attributes() {
  static const std::set<std::string> s = {
      "id", "class", "width", "height", "viewBox", "preserveAspectRatio", "transform", "x", "y", "x1", "y1", "x2",
      "y2", "cx", "cy", "r", "rx", "ry", "fx", "fy", "dx", "dy", "d", "points", "fill", "fill-opacity",
      "fill-rule", "stroke", "stroke-width", "stroke-opacity", "stroke-dasharray", "stroke-linecap",
      "stroke-linejoin", "stroke-miterlimit", "opacity", "font-family", "font-size", "font-weight", "font-style",
      "text-anchor", "dominant-baseline", "xml:space", "offset", "stop-color", "stop-opacity", "gradientUnits",
      "gradientTransform"};
  return s;
}

void append_utf8(std::string& out, unsigned long cp) {
  if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) cp = 0xFFFD;
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// XML character data with its entity references resolved (unknown ones stay literal text).
std::string decode_entities(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '&') {
      out += s[i];
      continue;
    }
    size_t semi = s.find(';', i);
    if (semi == std::string::npos || semi - i > 12) {
      out += '&';
      continue;
    }
    std::string name = s.substr(i + 1, semi - i - 1);
    bool ok = true;
    if (name == "amp") out += '&';
    else if (name == "lt") out += '<';
    else if (name == "gt") out += '>';
    else if (name == "quot") out += '"';
    else if (name == "apos") out += '\'';
    else if (name == "nbsp") append_utf8(out, 0xA0);
    else if (name.size() > 1 && name[0] == '#') {
      bool hex = name[1] == 'x' || name[1] == 'X';
      std::string digits = name.substr(hex ? 2 : 1);
      ok = !digits.empty() && std::all_of(digits.begin(), digits.end(), [&](char c) {
        return hex ? std::isxdigit(static_cast<unsigned char>(c)) != 0 : std::isdigit(static_cast<unsigned char>(c)) != 0;
      });
      if (ok) append_utf8(out, std::stoul(digits, nullptr, hex ? 16 : 10));
    } else {
      ok = false;
    }
    if (ok) i = semi;
    else out += '&';
  }
  return out;
}

// Only same-document references: every url( must be url(#...).
bool value_is_inert(const std::string& value) {
  std::string v;
  for (char c : value)
    if (!std::isspace(static_cast<unsigned char>(c))) v += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (size_t at = v.find("url("); at != std::string::npos; at = v.find("url(", at + 4)) {
    size_t start = at + 4;
    if (start < v.size() && (v[start] == '\'' || v[start] == '"')) ++start;
    if (start >= v.size() || v[start] != '#') return false;
  }
  return v.find("javascript:") == std::string::npos && v.find("data:") == std::string::npos;
}

bool name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == ':' || c == '-' || c == '_' || c == '.';
}

struct Tag {
  std::string name;
  std::vector<std::pair<std::string, std::string>> attributes;
  bool closing = false;
  bool self_closing = false;
};

// Parses the tag starting at s[i] == '<'; returns the index after it.
size_t parse_tag(const std::string& s, size_t i, Tag& tag) {
  ++i;
  if (i < s.size() && s[i] == '/') tag.closing = true, ++i;
  while (i < s.size() && name_char(s[i])) tag.name += s[i++];
  while (i < s.size() && s[i] != '>') {
    if (s[i] == '/' ) {
      tag.self_closing = true;
      ++i;
      continue;
    }
    if (!name_char(s[i])) {
      ++i;
      continue;
    }
    tag.self_closing = false;
    std::string name;
    while (i < s.size() && name_char(s[i])) name += s[i++];
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    std::string value;
    if (i < s.size() && s[i] == '=') {
      ++i;
      while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
      if (i < s.size() && (s[i] == '"' || s[i] == '\'')) {
        char q = s[i++];
        size_t end = s.find(q, i);
        if (end == std::string::npos) end = s.size();
        value = s.substr(i, end - i);
        i = end < s.size() ? end + 1 : end;
      } else {
        while (i < s.size() && !std::isspace(static_cast<unsigned char>(s[i])) && s[i] != '>') value += s[i++];
      }
    }
    tag.attributes.emplace_back(name, value);
  }
  return i < s.size() ? i + 1 : i;
}

size_t skip_past(const std::string& s, size_t i, const char* end) {
  size_t at = s.find(end, i);
  return at == std::string::npos ? s.size() : at + std::char_traits<char>::length(end);
}

}  // namespace

std::string sanitize_svg(const std::string& svg) {
  std::string out;
  out.reserve(svg.size());
  struct Open {
    std::string name;
    bool emitted;  // false for unwrapped (<a>) and dropped elements
    bool dropped;
  };
  std::vector<Open> stack;
  int dropping = 0;  // open dropped elements: their content goes nowhere
  size_t i = 0;
  while (i < svg.size()) {
    if (svg[i] != '<') {
      size_t end = svg.find('<', i);
      if (end == std::string::npos) end = svg.size();
      if (dropping == 0 && !stack.empty()) out += html_escape(decode_entities(svg.substr(i, end - i)));
      i = end;
      continue;
    }
    if (svg.compare(i, 4, "<!--") == 0) {
      i = skip_past(svg, i + 4, "-->");
      continue;
    }
    if (svg.compare(i, 9, "<![CDATA[") == 0) {
      i = skip_past(svg, i + 9, "]]>");
      continue;
    }
    if (svg.compare(i, 2, "<!") == 0 || svg.compare(i, 2, "<?") == 0) {
      i = skip_past(svg, i + 2, ">");
      continue;
    }
    Tag tag;
    i = parse_tag(svg, i, tag);
    if (tag.name.empty()) continue;
    if (tag.closing) {
      auto it = std::find_if(stack.rbegin(), stack.rend(), [&](const Open& o) { return o.name == tag.name; });
      if (it == stack.rend()) continue;  // a stray close tag
      size_t keep = static_cast<size_t>(stack.rend() - it) - 1;
      while (stack.size() > keep) {
        if (stack.back().emitted) out += "</" + stack.back().name + ">";
        if (stack.back().dropped) --dropping;
        stack.pop_back();
      }
      continue;
    }
    bool kept = dropping == 0 && kept_elements().count(tag.name) > 0 && (tag.name == "svg" || !stack.empty());
    bool unwrap = dropping == 0 && tag.name == "a" && !stack.empty();
    if (kept) {
      out += "<" + tag.name;
      if (tag.name == "svg") out += " xmlns=\"http://www.w3.org/2000/svg\"";
      for (const auto& [name, raw] : tag.attributes) {
        if (!kept_attributes().count(name)) continue;
        std::string value = decode_entities(raw);
        if (!value_is_inert(value)) continue;
        out += " " + name + "=\"" + html_escape(value) + "\"";
      }
      out += tag.self_closing ? "/>" : ">";
    }
    if (tag.self_closing) continue;
    bool dropped = !kept && !unwrap;
    if (dropped) ++dropping;
    stack.push_back({tag.name, kept, dropped});
  }
  while (!stack.empty()) {
    if (stack.back().emitted) out += "</" + stack.back().name + ">";
    stack.pop_back();
  }
  return out;
}

}  // namespace kiln::report
