#include "engine/ir/print_text.h"

#include <algorithm>
#include <sstream>

namespace kiln::ir {

namespace {

std::string args_str(const Node& n) {
  std::string s;
  for (size_t i = 0; i < n.args.size(); ++i) {
    if (i) s += ", ";
    s += n.args[i].str();
  }
  for (const auto& kw : n.kwargs) {
    if (!s.empty()) s += ", ";
    s += kw.first + "=" + kw.second.str();
  }
  return s;
}

std::string outputs_str(const std::vector<Value>& outs) {
  std::string s;
  for (size_t i = 0; i < outs.size(); ++i) {
    if (i) s += ", ";
    s += "%" + outs[i].name + " : " + outs[i].meta.str();
  }
  return s;
}

// Source text is model data: keep it on one line whatever it contains.
std::string one_line(const std::string& s) {
  std::string out;
  for (char c : s) out += (c == '\n' || c == '\r') ? ' ' : c;
  return out;
}

struct Readable {
  std::ostringstream os;
  std::string last_origin;

  void origin(const Node& n, const std::string& indent) {
    if (!n.loc.known() && n.module_path.empty()) return;
    std::string o = n.loc.str();
    if (!n.module_path.empty()) o += (o.empty() ? "in " : " in ") + n.module_path;
    if (!n.loc.text.empty()) o += ": " + one_line(n.loc.text);
    // One comment per source line and module: columns alone do not repeat it.
    std::string key = n.loc.file + ":" + std::to_string(n.loc.line) + "|" + n.module_path;
    if (key == last_origin) return;
    last_origin = key;
    os << indent << "# " << o << "\n";
  }

  void nodes(const std::vector<Node>& ns, const std::string& indent) {
    for (const auto& n : ns) {
      switch (n.op) {
        case NodeOp::Placeholder:
          os << indent << outputs_str(n.outputs) << " = placeholder[" << n.target << "]\n";
          break;
        case NodeOp::GetAttr:
          os << indent << outputs_str(n.outputs) << " = get_attr[" << n.target << "]\n";
          break;
        case NodeOp::Output:
          os << indent << "return (" << args_str(n) << ")\n";
          break;
        case NodeOp::CallFunction: {
          origin(n, indent);
          os << indent;
          if (!n.outputs.empty()) os << outputs_str(n.outputs) << " = ";
          os << n.target << "(" << args_str(n) << ")";
          if (!n.note.empty()) os << "  # " << one_line(n.note);
          os << "\n";
          for (size_t b = 0; b < n.blocks.size(); ++b) {
            const Block& blk = n.blocks[b];
            os << indent << "  block" << b << "(";
            for (size_t i = 0; i < blk.params.size(); ++i)
              os << (i ? ", " : "") << "%" << blk.params[i].name << " : " << blk.params[i].meta.str();
            os << "):\n";
            nodes(blk.nodes, indent + "    ");
            os << indent << "    -> (";
            for (size_t i = 0; i < blk.returns.size(); ++i) os << (i ? ", " : "") << blk.returns[i].str();
            os << ")\n";
            last_origin.clear();
          }
          break;
        }
      }
    }
  }
};

void table_rows(const std::vector<Node>& ns, const std::string& prefix, std::vector<std::vector<std::string>>& rows) {
  for (const auto& n : ns) {
    std::string name = n.outputs.empty() ? "" : n.name();
    std::string meta;
    for (size_t i = 0; i < n.outputs.size(); ++i) meta += (i ? ", " : "") + n.outputs[i].meta.str();
    rows.push_back({prefix + node_op_name(n.op), name, n.target, args_str(n), meta, n.module_path, n.loc.str()});
    for (size_t b = 0; b < n.blocks.size(); ++b) table_rows(n.blocks[b].nodes, prefix + "  ", rows);
  }
}

}  // namespace

std::string to_readable(const Graph& g) {
  Readable r;
  std::string params;
  for (const auto& n : g.nodes)
    if (n.op == NodeOp::Placeholder) params += (params.empty() ? "" : ", ") + n.name() + ": " + n.outputs[0].meta.str();
  r.os << "graph " << (g.name.empty() ? "forward" : g.name) << "(" << params << "):\n";
  r.nodes(g.nodes, "  ");
  return r.os.str();
}

std::string to_table(const Graph& g) {
  std::vector<std::vector<std::string>> rows{{"opcode", "name", "target", "args", "meta", "module", "source"}};
  table_rows(g.nodes, "", rows);
  std::vector<size_t> width(rows[0].size(), 0);
  const size_t max_width = 48;
  for (auto& r : rows)
    for (size_t c = 0; c < r.size(); ++c) {
      r[c] = one_line(r[c]);
      if (r[c].size() > max_width) r[c] = r[c].substr(0, max_width - 3) + "...";
      width[c] = std::max(width[c], r[c].size());
    }
  std::ostringstream os;
  for (size_t i = 0; i < rows.size(); ++i) {
    std::string line;
    for (size_t c = 0; c < rows[i].size(); ++c) {
      std::string cell = rows[i][c];
      if (c + 1 < rows[i].size()) cell.resize(width[c], ' ');
      line += cell + (c + 1 < rows[i].size() ? "  " : "");
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    os << line << "\n";
    if (i == 0) {
      std::string rule;
      for (size_t c = 0; c < width.size(); ++c) rule += std::string(width[c], '-') + (c + 1 < width.size() ? "  " : "");
      os << rule << "\n";
    }
  }
  return os.str();
}

}  // namespace kiln::ir
