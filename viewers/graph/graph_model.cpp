#include "viewers/graph/graph_model.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <sstream>

#include "engine/api/files.h"

namespace kiln::viewers {

namespace {

std::string short_dtype(const std::string& d) {
  if (d == "float32") return "f32";
  if (d == "float64") return "f64";
  if (d == "float16") return "f16";
  if (d == "bfloat16") return "bf16";
  if (d == "int64") return "i64";
  if (d == "int32") return "i32";
  if (d == "bool") return "b8";
  return d;
}

std::string shape_text(const nlohmann::json& meta) {
  if (!meta.is_object() || meta.value("type", "") != "Tensor") return meta.is_object() ? meta.value("type", "") : "";
  std::string s = short_dtype(meta.value("dtype", "")) + "[";
  if (meta.contains("shape") && meta["shape"].is_array())
    for (size_t i = 0; i < meta["shape"].size(); ++i) {
      const auto& d = meta["shape"][i];
      s += (i ? ", " : "") + (d.is_number() ? std::to_string(d.get<long long>()) : d.is_string() ? d.get<std::string>() : "?");
    }
  return s + "]";
}

void collect_refs(const nlohmann::json& a, std::vector<std::string>& out) {
  if (a.is_object() && a.contains("ref") && a["ref"].is_string()) out.push_back(a["ref"].get<std::string>());
  else if (a.is_array() || a.is_object())
    for (const auto& x : a) collect_refs(x, out);
}

std::string dot_quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += (c == '\n' || c == '\r') ? ' ' : c;
  }
  return out + "\"";
}

// Module path prefixes: "a.b.c" → "a", "a.b", "a.b.c".
std::vector<std::string> prefixes(const std::string& path) {
  std::vector<std::string> out;
  for (size_t i = 0; i <= path.size(); ++i)
    if (i == path.size() || path[i] == '.') out.push_back(path.substr(0, i));
  return out;
}

}  // namespace

GraphModel parse_graph_json(const std::string& text) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    throw Error(std::string("graph JSON does not parse: ") + e.what());
  }
  const auto& nodes = j.contains("graph") ? j["graph"]["nodes"] : j["nodes"];
  if (!nodes.is_array()) throw Error("graph JSON has no \"nodes\" list");
  GraphModel g;
  std::vector<std::vector<std::string>> refs;
  for (const auto& n : nodes) {
    GraphNode gn;
    gn.name = n.value("name", "");
    gn.op = n.value("op", "");
    gn.target = n.contains("target") && n["target"].is_string() ? n["target"].get<std::string>() : "";
    gn.module = n.contains("module") && n["module"].is_string() ? n["module"].get<std::string>() : "";
    if (n.contains("outputs") && n["outputs"].is_array() && !n["outputs"].empty())
    {
      const auto meta = n["outputs"][0].value("meta", nlohmann::json::object());
      gn.shape = shape_text(meta);
      gn.tensor = meta.is_object() && meta.value("type", "") == "Tensor";
    }
    std::vector<std::string> r;
    if (n.contains("args")) collect_refs(n["args"], r);
    if (n.contains("kwargs")) collect_refs(n["kwargs"], r);
    refs.push_back(r);
    g.index[gn.name] = static_cast<int>(g.nodes.size());
    g.nodes.push_back(std::move(gn));
  }
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (const auto& r : refs[i]) {
      auto it = g.index.find(r);
      if (it != g.index.end()) g.nodes[i].inputs.push_back(it->second);
    }
  return g;
}

GraphModel fold_parameters(const GraphModel& g) {
  GraphModel out;
  std::vector<int> renumber(g.nodes.size(), -1);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (g.nodes[i].op == "get_attr") continue;
    renumber[i] = static_cast<int>(out.nodes.size());
    out.index[g.nodes[i].name] = renumber[i];
    out.nodes.push_back(g.nodes[i]);
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (renumber[i] < 0) continue;
    GraphNode& n = out.nodes[renumber[i]];
    n.inputs.clear();
    for (int in : g.nodes[i].inputs) {
      if (renumber[in] >= 0) {
        n.inputs.push_back(renumber[in]);
        continue;
      }
      const GraphNode& p = g.nodes[in];
      std::string path = p.target.empty() ? p.name : p.target;
      std::string label = path.substr(path.rfind('.') == std::string::npos ? 0 : path.rfind('.') + 1);
      if (label.find_first_not_of("0123456789") == std::string::npos) label = "const";  // TorchScript's "482"
      if (!p.shape.empty()) label += " " + p.shape;
      if (std::find(n.params.begin(), n.params.end(), label) == n.params.end()) n.params.push_back(label);
      out.folded.emplace(p.name, n.name);
    }
  }
  return out;
}

std::set<std::string> default_collapsed(const GraphModel& g, int threshold) {
  std::set<std::string> out;
  if (static_cast<int>(g.nodes.size()) <= threshold) return out;
  // The shallowest module depth with at least 8 distinct modules (or the deepest there is): few
  // enough boxes to read, enough to show the model's structure.
  for (size_t depth = 1; depth < 16; ++depth) {
    std::set<std::string> at;
    bool deeper = false;
    for (const auto& n : g.nodes) {
      if (n.module.empty()) continue;
      auto p = prefixes(n.module);
      if (p.size() >= depth) at.insert(p[depth - 1]);  // shallower nodes stay in their parent's cluster
      deeper |= p.size() > depth;
    }
    out = at;
    if (at.size() >= 8 || !deeper) break;
  }
  return out;
}

std::string params_text(const GraphNode& n) {
  std::string out;
  const size_t shown = n.params.size() > 3 ? 2 : n.params.size();
  for (size_t i = 0; i < shown; ++i) out += (i ? ", " : "") + n.params[i];
  if (shown < n.params.size()) out += " +" + std::to_string(n.params.size() - shown) + " more";
  return out;
}

std::string box_of(const GraphNode& n, const std::set<std::string>& collapsed) {
  if (!n.module.empty())
    for (const auto& p : prefixes(n.module))
      if (collapsed.count(p)) return "module:" + p;
  return n.name;
}

GraphDot graph_dot(const GraphModel& g, const std::set<std::string>& collapsed) {
  GraphDot out;
  std::map<std::string, int> id;  // box → DOT index
  // Cluster tree of expanded module paths: path → boxes directly inside.
  std::map<std::string, std::vector<int>> inside;
  for (const auto& n : g.nodes) {
    std::string box = box_of(n, collapsed);
    if (!id.count(box)) {
      id[box] = static_cast<int>(out.boxes.size());
      out.boxes.push_back(box);
      // A collapsed module sits in its parent's cluster; a node in its own module's cluster.
      std::string parent = box.rfind("module:", 0) == 0 ? box.substr(7) : n.module;
      if (box.rfind("module:", 0) == 0) {
        auto dot = parent.rfind('.');
        parent = dot == std::string::npos ? "" : parent.substr(0, dot);
      }
      inside[parent].push_back(id[box]);
    }
    if (box.rfind("module:", 0) == 0) ++out.members[box];
  }
  std::ostringstream os;
  os << "digraph G {\n  rankdir=TB; nodesep=0.25; ranksep=0.35;\n"
     << "  node [shape=box, fixedsize=true, height=0.72, label=\"\"];\n";
  // Emit clusters recursively from the root "".
  std::set<std::string> paths;
  for (const auto& [p, v] : inside)
    for (const auto& q : prefixes(p))
      if (!p.empty()) paths.insert(q);
  std::function<void(const std::string&, int)> emit = [&](const std::string& path, int depth) {
    std::string pad(2 * depth + 2, ' ');
    auto it = inside.find(path);
    if (it != inside.end())
      for (int b : it->second) {
        const auto& box = out.boxes[b];
        double w = 1.5;
        if (box.rfind("module:", 0) == 0) w = std::max(2.4, 0.085 * static_cast<double>(box.size() - 5));
        else {
          const auto& n = g.nodes[g.index.at(box)];
          size_t chars = std::max(n.target.size(), n.name.size() + 2 + n.shape.size());
          if (!n.params.empty()) chars = std::max(chars, params_text(n).size());
          w = std::min(4.0, std::max(1.3, 0.072 * static_cast<double>(chars + 2)));
          if (!n.params.empty()) {
            os << pad << "b" << b << " [width=" << w << ", height=0.9];\n";
            continue;
          }
        }
        os << pad << "b" << b << " [width=" << w << "];\n";
      }
    for (const auto& child : paths) {
      if (child == path || child.empty()) continue;
      auto dot = child.rfind('.');
      std::string parent = dot == std::string::npos ? "" : child.substr(0, dot);
      if (parent != path) continue;
      os << pad << "subgraph " << dot_quote("cluster_" + child) << " {\n"
         << pad << "  label=" << dot_quote(child) << "; labeljust=l; fontsize=10; margin=10;\n";
      emit(child, depth + 1);
      os << pad << "}\n";
    }
  };
  emit("", 0);
  std::set<std::pair<int, int>> edges;
  for (const auto& n : g.nodes) {
    int to = id[box_of(n, collapsed)];
    for (int in : n.inputs) {
      int from = id[box_of(g.nodes[in], collapsed)];
      if (from != to) edges.insert({from, to});
    }
  }
  for (const auto& [a, b] : edges) os << "  b" << a << " -> b" << b << ";\n";
  os << "}\n";
  out.dot = os.str();
  return out;
}

GraphLayout layout_graph(const GraphModel& g, const std::set<std::string>& collapsed) {
  auto dot = graph_dot(g, collapsed);
  GraphLayout out = graphviz_layout(dot.dot);
  auto box_id = [&](std::string& id) {
    if (id.size() > 1 && id[0] == 'b') {
      size_t i = std::strtoul(id.c_str() + 1, nullptr, 10);
      if (i < dot.boxes.size()) id = dot.boxes[i];
    }
  };
  for (auto& b : out.boxes) box_id(b.id);
  for (auto& e : out.edges) {
    box_id(e.from);
    box_id(e.to);
  }
  return out;
}

}  // namespace kiln::viewers
