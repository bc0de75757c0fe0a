// Text for GitHub Markdown, one home for the reports and `kiln stats`:
//   md(raw)             plain text in a paragraph or table cell, shown literally (control characters
//                       visible, Markdown and HTML syntax escaped, newlines as spaces).
//   code(raw, in_table) an inline code span no run of backticks inside can close.
#pragma once

#include <cstddef>
#include <string>

namespace kiln::report::markdown {

std::string without_cr(std::string text);
std::string md(const std::string& raw);
size_t longest_backtick_run(const std::string& text);
std::string code(const std::string& raw, bool in_table = true);

}  // namespace kiln::report::markdown
