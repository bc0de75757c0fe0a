#include "engine/codegen/emitted.h"

namespace kiln::codegen {

std::vector<NodeNote> node_notes(const ir::Graph& graph) {
  std::vector<NodeNote> notes;
  for (const auto& n : graph.nodes)
    if (n.op == ir::NodeOp::CallFunction && !n.outputs.empty())
      notes.push_back({n.name(), n.target, n.loc.str() + (n.module_path.empty() ? "" : " in " + n.module_path)});
  return notes;
}

std::string cpp_comment(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    // "??/" is a backslash to compilers that read trigraphs (C++14 and older): keep '?'s apart.
    if (c == '?' && !out.empty() && out.back() == '?') out += ' ';
    out += (c >= 0x20 && c < 0x7f) ? static_cast<char>(c) : ' ';
  }
  while (!out.empty() && (out.back() == '\\' || out.back() == ' ')) out.pop_back();
  return out;
}

std::string node_comment_lines(const std::vector<std::string>& nodes, const std::vector<NodeNote>& notes) {
  std::string out;
  for (const auto& nd : nodes) {
    out += "//   " + cpp_comment(nd);
    for (const auto& note : notes)
      if (note.name == nd) {
        out += " = " + cpp_comment(note.target);
        if (!note.where.empty()) out += "  (" + cpp_comment(note.where) + ")";
      }
    out += "\n";
  }
  return out;
}

std::string kernel_text(const std::string& source, const std::vector<KernelSpan>& spans, const std::string& name) {
  for (const auto& s : spans)
    if (s.name == name) return s.begin < s.end && s.end <= source.size() ? source.substr(s.begin, s.end - s.begin) : "";
  return "";
}

}  // namespace kiln::codegen
