#include "engine/report/markdown_text.h"

#include <algorithm>
#include <cstring>

#include "engine/base/control_chars.h"
#include "engine/report/html_text.h"

namespace kiln::report::markdown {

std::string without_cr(std::string text) {
  text.erase(std::remove(text.begin(), text.end(), '\r'), text.end());
  return text;
}

// Plain text in a paragraph or a table cell: shown literally by GitHub (control characters visible).
std::string md(const std::string& raw) {
  std::string text = visible_controls(without_cr(raw));
  std::string out;
  for (char c : text) {
    if (c == '&' || c == '<' || c == '>') out += html_entity(static_cast<unsigned char>(c));
    else if (c != 0 && std::strchr("|\\*_`[]~!#", c)) out += std::string("\\") + c;  // Markdown syntax, literal
    else out += c == '\n' ? ' ' : c;
  }
  return out;
}

size_t longest_backtick_run(const std::string& text) {
  size_t longest = 0, run = 0;
  for (char c : text) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  return longest;
}

// An inline code span whose fence no run of backticks inside can close; in a table cell a pipe
// still needs its backslash.
std::string code(const std::string& raw, bool in_table) {
  std::string text = visible_controls(without_cr(raw));
  std::string body;
  for (char c : text) {
    if (c == '\n' || c == '\r') body += ' ';
    else if (c == '|' && in_table) body += "\\|";
    else body += c;
  }
  if (body.empty()) return "";
  size_t run = longest_backtick_run(body);
  std::string fence(run + 1, '`');
  // A space on each side keeps a backtick at either end of the body from touching the fence.
  std::string pad = run > 0 ? " " : "";
  return fence + pad + body + pad + fence;
}

}  // namespace kiln::report::markdown
