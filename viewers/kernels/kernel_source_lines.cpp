#include "viewers/kernels/kernel_source_lines.h"

#include <algorithm>
#include <sstream>

namespace kiln::viewers {

namespace {

bool is_ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

bool is_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), is_ident_char);
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

// The comment text of a line: after "//" (C++/CUDA) or "#" (Python), outside string literals.
std::string comment_of(const std::string& line) {
  char quote = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quote) {
      if (c == '\\') ++i;
      else if (c == quote) quote = 0;
      continue;
    }
    if (c == '"' || c == '\'') quote = c;
    else if (c == '/' && i + 1 < line.size() && line[i + 1] == '/') return line.substr(i + 2);
    else if (c == '#') {
      // "#pragma", "#include": preprocessor lines, not comments.
      std::string rest = line.substr(i + 1);
      if (trim(line.substr(0, i)).empty() && !rest.empty() && std::isalpha(static_cast<unsigned char>(rest[0])))
        return "";
      return rest;
    }
  }
  return "";
}

}  // namespace

std::vector<std::string> nodes_named_on_line(const std::string& line) {
  std::string c = trim(comment_of(line));
  if (c.empty()) return {};
  const std::string source_nodes = "Source Nodes: [";
  if (c.rfind(source_nodes, 0) == 0) {
    std::vector<std::string> out;
    std::string list = c.substr(source_nodes.size(), c.find(']') - source_nodes.size());
    std::istringstream in(list);
    for (std::string t; std::getline(in, t, ',');)
      if (is_identifier(trim(t))) out.push_back(trim(t));
    return out;
  }
  if (size_t eq = c.find(" = "); eq != std::string::npos) c = trim(c.substr(0, eq));  // "q_1 = aten::transpose"
  if (size_t f = c.find(" for "); f != std::string::npos && is_identifier(c.substr(0, f)))
    c = trim(c.substr(f + 5));  // "sum for layer_norm_sum"
  if (is_identifier(c)) return {c};
  return {};
}

std::vector<int> lines_naming_node(const std::string& source, const std::string& node) {
  std::vector<int> out;
  if (node.empty()) return out;
  std::istringstream in(source);
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    auto names = nodes_named_on_line(line);
    if (std::find(names.begin(), names.end(), node) != names.end()) out.push_back(n);
  }
  return out;
}

}  // namespace kiln::viewers
