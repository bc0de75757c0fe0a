#include "engine/ir/to_dot.h"

#include <functional>
#include <map>
#include <memory>
#include <sstream>

namespace kiln::ir {

std::string dot_quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20 || c == 0x7f) {
      out += ' ';
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

namespace {

// Tree of module clusters: "layer1.0.conv1" nests in "layer1.0" in "layer1".
struct Cluster {
  std::string path;
  std::vector<std::string> node_lines;
  std::map<std::string, std::unique_ptr<Cluster>> children;
};

struct DotWriter {
  std::ostringstream edges;
  Cluster root;
  std::map<std::string, std::string> producer;  // value name -> dot node id
  int next_id = 0;
  int next_cluster = 0;

  Cluster& cluster_for(const std::string& path) {
    Cluster* c = &root;
    if (path.empty()) return *c;
    std::string prefix;
    size_t start = 0;
    while (start <= path.size()) {
      size_t dot = path.find('.', start);
      std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
      prefix += (prefix.empty() ? "" : ".") + part;
      auto& child = c->children[part];
      if (!child) {
        child = std::make_unique<Cluster>();
        child->path = prefix;
      }
      c = child.get();
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
    return *c;
  }

  void uses(const Arg& a, const std::string& to) {
    if (a.kind == Arg::Kind::Ref) {
      auto it = producer.find(a.ref);
      if (it != producer.end()) edges << "  " << it->second << " -> " << to << ";\n";
    }
    for (const auto& item : a.items) uses(item, to);
  }

  std::string label(const Node& n) {
    std::string first;
    switch (n.op) {
      case NodeOp::Placeholder: first = "input " + n.target; break;
      case NodeOp::GetAttr: first = n.target; break;
      case NodeOp::Output: first = "output"; break;
      case NodeOp::CallFunction: first = n.target; break;
    }
    std::string l = first;
    for (const auto& o : n.outputs) l += "\n" + o.meta.str();
    if (n.op == NodeOp::CallFunction && n.loc.known()) l += "\n" + n.loc.str();
    return l;
  }

  void node_list(const std::vector<Node>& ns, std::vector<std::string>* block_lines) {
    for (const auto& n : ns) {
      std::string id = "n" + std::to_string(next_id++);
      std::string style;
      switch (n.op) {
        case NodeOp::Placeholder: style = "shape=ellipse, style=filled, fillcolor=\"#dbeafe\""; break;
        case NodeOp::GetAttr: style = "shape=note, style=filled, fillcolor=\"#f3f4f6\", fontsize=9"; break;
        case NodeOp::Output: style = "shape=ellipse, style=filled, fillcolor=\"#dcfce7\""; break;
        case NodeOp::CallFunction: style = "shape=box, style=\"rounded,filled\", fillcolor=\"#fff7ed\""; break;
      }
      std::string line = id + " [label=" + dot_quote(label(n)) + ", " + style + "];";
      if (block_lines) block_lines->push_back(line);
      else cluster_for(n.module_path).node_lines.push_back(line);
      for (const auto& a : n.args) uses(a, id);
      for (const auto& kw : n.kwargs) uses(kw.second, id);
      for (size_t b = 0; b < n.blocks.size(); ++b) {
        const Block& blk = n.blocks[b];
        std::vector<std::string> inner;
        std::string bid = id + "_b" + std::to_string(b);
        for (const auto& p : blk.params) producer[p.name] = id;
        node_list(blk.nodes, &inner);
        std::string ret = bid + "_ret";
        inner.push_back(ret + " [label=\"->\", shape=point];");
        for (const auto& r : blk.returns) uses(r, ret);
        edges << "  " << ret << " -> " << id << " [style=dashed];\n";
        std::ostringstream c;
        c << "subgraph cluster_" << bid << " {\n    label=" << dot_quote(n.target + " block" + std::to_string(b))
          << "; style=dashed; color=\"#9ca3af\";\n";
        for (const auto& l : inner) c << "    " << l << "\n";
        c << "  }";
        if (block_lines) block_lines->push_back(c.str());
        else cluster_for(n.module_path).node_lines.push_back(c.str());
      }
      for (const auto& o : n.outputs) producer[o.name] = id;
    }
  }

  void emit(std::ostringstream& os, const Cluster& c, const std::string& indent) {
    for (const auto& l : c.node_lines) os << indent << l << "\n";
    for (const auto& [name, child] : c.children) {
      os << indent << "subgraph cluster_m" << next_cluster++ << " {\n";
      os << indent << "  label=" << dot_quote(child->path) << "; style=\"rounded,filled\"; fillcolor=\"#f8fafc\"; "
         << "color=\"#94a3b8\";\n";
      emit(os, *child, indent + "  ");
      os << indent << "}\n";
    }
  }
};

}  // namespace

std::string to_dot(const Graph& g) {
  DotWriter w;
  w.node_list(g.nodes, nullptr);
  std::ostringstream os;
  os << "digraph " << dot_quote(g.name.empty() ? "graph" : g.name) << " {\n";
  os << "  rankdir=TB; node [fontname=\"Helvetica\", fontsize=10]; edge [color=\"#64748b\"];\n";
  w.emit(os, w.root, "  ");
  os << w.edges.str();
  os << "}\n";
  return os.str();
}

}  // namespace kiln::ir
