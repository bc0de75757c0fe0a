// One pass over the module's lines: comment blocks are remembered until the next code line, a
// definition line opens a kernel that the closing ''' line ends, and `.run(` lines are collected.
#include "engine/importers/torch_trace/output_code.h"

#include <cctype>
#include <unordered_map>

namespace kiln::importers {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool is_identifier(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

std::string language_of(std::string_view kind) {
  if (kind == "triton") return "triton";
  if (kind == "cpp" || kind == "cpp_pybinding") return "cpp";
  if (kind == "cuda") return "cuda";
  return std::string(kind);
}

std::vector<std::string> source_nodes(std::string_view comment) {
  std::vector<std::string> nodes;
  size_t at = comment.find("Source Nodes: [");
  if (at == std::string_view::npos) return nodes;
  at += 15;
  size_t end = comment.find(']', at);
  if (end == std::string_view::npos) end = comment.size();
  std::string_view list = comment.substr(at, end - at);
  while (!list.empty()) {
    size_t comma = list.find(',');
    std::string_view item = trim(list.substr(0, comma));
    if (!item.empty()) nodes.emplace_back(item);
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return nodes;
}

}  // namespace

std::vector<session::Kernel> kernels_from_output_code(std::string_view code, const std::string& compile_id,
                                                      const std::string& file_name) {
  std::vector<session::Kernel> out;
  session::Kernel whole;
  size_t slash = file_name.find_last_of('/');
  whole.name = file_name.empty() ? "output_code" : file_name.substr(slash == std::string::npos ? 0 : slash + 1);
  whole.compile_id = compile_id;
  whole.language = "python";
  whole.source = std::string(code);
  out.push_back(std::move(whole));

  std::unordered_map<std::string, size_t> by_name;  // kernel name → index in out
  std::unordered_map<std::string, std::string> first_run;
  std::string_view nodes_comment;  // "Source Nodes" line of the current comment block
  session::Kernel* open = nullptr;
  size_t open_from = 0;  // byte offset where the open kernel's source starts

  size_t pos = 0;
  while (pos < code.size()) {
    size_t nl = code.find('\n', pos);
    size_t line_end = nl == std::string_view::npos ? code.size() : nl;
    std::string_view line = code.substr(pos, line_end - pos);
    size_t next = nl == std::string_view::npos ? code.size() : nl + 1;

    if (open) {
      if (line.substr(0, 3) == "'''") {
        open->source = std::string(code.substr(open_from, pos - open_from));
        open = nullptr;
      }
      pos = next;
      continue;
    }
    std::string_view t = trim(line);
    if (!t.empty() && t[0] == '#') {
      if (t.find("Source Nodes: [") != std::string_view::npos) nodes_comment = t;
    } else if (!t.empty()) {
      // NAME = async_compile.KIND(... '''
      size_t eq = line.find(" = async_compile.");
      size_t quotes = line.find("'''");
      if (eq != std::string_view::npos && quotes != std::string_view::npos && is_identifier(line.substr(0, eq))) {
        std::string_view rest = line.substr(eq + 17);
        std::string_view kind = rest.substr(0, rest.find('('));
        session::Kernel k;
        k.name = std::string(line.substr(0, eq));
        k.compile_id = compile_id;
        k.language = language_of(kind);
        k.nodes = source_nodes(nodes_comment);
        by_name[k.name] = out.size();
        out.push_back(std::move(k));
        open = &out.back();
        open_from = pos + quotes + 3;
        if (open_from < next && code[open_from] == '\n') ++open_from;
        if (open_from > next) open_from = next;
      } else {
        size_t run = t.find(".run(");
        if (run != std::string_view::npos && is_identifier(t.substr(0, run))) {
          std::string name(t.substr(0, run));
          first_run.emplace(name, std::string(t.substr(run + 1)));
        }
      }
      nodes_comment = {};
    }
    pos = next;
  }
  if (open) open->source = std::string(code.substr(open_from));  // cut short

  for (auto& [name, call] : first_run) {
    auto it = by_name.find(name);
    if (it != by_name.end()) out[it->second].launch_config = call;
  }
  return out;
}

}  // namespace kiln::importers
