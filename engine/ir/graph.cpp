#include "engine/ir/graph.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <functional>
#include <set>
#include <sstream>

#include "engine/base/escape.h"

namespace kiln::ir {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::Float32: return "float32";
    case DType::Float64: return "float64";
    case DType::Float16: return "float16";
    case DType::BFloat16: return "bfloat16";
    case DType::Int64: return "int64";
    case DType::Int32: return "int32";
    case DType::Int16: return "int16";
    case DType::Int8: return "int8";
    case DType::UInt8: return "uint8";
    case DType::Bool: return "bool";
    case DType::Unknown: break;
  }
  return "unknown";
}

static const char* dtype_short(DType t) {
  switch (t) {
    case DType::Float32: return "f32";
    case DType::Float64: return "f64";
    case DType::Float16: return "f16";
    case DType::BFloat16: return "bf16";
    case DType::Int64: return "i64";
    case DType::Int32: return "i32";
    case DType::Int16: return "i16";
    case DType::Int8: return "i8";
    case DType::UInt8: return "u8";
    case DType::Bool: return "b8";
    case DType::Unknown: break;
  }
  return "?";
}

std::optional<DType> parse_dtype(const std::string& raw) {
  std::string n;
  for (char c : raw) n += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (n.rfind("torch.", 0) == 0) n = n.substr(6);
  if (n == "float32" || n == "float" || n == "f32") return DType::Float32;
  if (n == "float64" || n == "double" || n == "f64") return DType::Float64;
  if (n == "float16" || n == "half" || n == "f16") return DType::Float16;
  if (n == "bfloat16" || n == "bf16") return DType::BFloat16;
  if (n == "int64" || n == "long" || n == "i64") return DType::Int64;
  if (n == "int32" || n == "int" || n == "i32") return DType::Int32;
  if (n == "int16" || n == "short" || n == "i16") return DType::Int16;
  if (n == "int8" || n == "i8") return DType::Int8;
  if (n == "uint8" || n == "u8") return DType::UInt8;
  if (n == "bool") return DType::Bool;
  return std::nullopt;
}

int dtype_size(DType t) {
  switch (t) {
    case DType::Float64: case DType::Int64: return 8;
    case DType::Float32: case DType::Int32: return 4;
    case DType::Float16: case DType::BFloat16: case DType::Int16: return 2;
    case DType::Int8: case DType::UInt8: case DType::Bool: return 1;
    case DType::Unknown: break;
  }
  return 0;
}

std::string Dim::str() const { return is_symbolic() ? symbol : std::to_string(value); }

std::string shape_str(const std::vector<Dim>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += shape[i].str();
  }
  return s + "]";
}

int64_t ValueMeta::numel() const {
  if (kind != Kind::Tensor) return -1;
  int64_t n = 1;
  for (const auto& d : shape) {
    if (d.is_symbolic()) return -1;
    n *= d.value;
  }
  return n;
}

std::string ValueMeta::str() const {
  switch (kind) {
    case Kind::Tensor:
      if (dtype == DType::Unknown && shape.empty()) return "Tensor";
      return std::string(dtype_short(dtype)) + shape_str(shape);
    case Kind::Int: return "int";
    case Kind::Float: return "float";
    case Kind::Bool: return "bool";
    case Kind::Str: return "str";
    case Kind::None: return "None";
    case Kind::Device: return "Device";
    case Kind::List:
    case Kind::Tuple:
    case Kind::Other: return type_name.empty() ? "?" : type_name;
    case Kind::Unknown: break;
  }
  return type_name.empty() ? "?" : type_name;
}

std::string SourceLoc::str() const {
  if (!known()) return "";
  auto slash = file.find_last_of('/');
  std::string base = slash == std::string::npos ? file : file.substr(slash + 1);
  std::string s = base + ":" + std::to_string(line);
  if (col > 0) s += ":" + std::to_string(col);
  return s;
}

static std::string quote(const std::string& s) { return quoted_literal(s, LiteralStyle::Python); }

static std::string format_double(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  // Prefer the shortest representation that round-trips.
  for (int p = 1; p <= 17; ++p) {
    char b2[32];
    std::snprintf(b2, sizeof b2, "%.*g", p, v);
    if (std::strtod(b2, nullptr) == v) {
      std::string s = b2;
      if (s.find_first_of(".eE") == std::string::npos) s += ".0";
      return s;
    }
  }
  return buf;
}

std::string Arg::str() const {
  switch (kind) {
    case Kind::Ref: return "%" + ref;
    case Kind::None: return "None";
    case Kind::Bool: return b ? "True" : "False";
    case Kind::Int: return std::to_string(i);
    case Kind::Float: return format_double(f);
    case Kind::Str: return quote(s);
    case Kind::List: {
      std::string out = "[";
      for (size_t k = 0; k < items.size(); ++k) {
        if (k) out += ", ";
        out += items[k].str();
      }
      return out + "]";
    }
    case Kind::Other: return s;
  }
  return "?";
}

const char* node_op_name(NodeOp op) {
  switch (op) {
    case NodeOp::Placeholder: return "placeholder";
    case NodeOp::GetAttr: return "get_attr";
    case NodeOp::CallFunction: return "call_function";
    case NodeOp::Output: return "output";
  }
  return "?";
}

const std::string& Node::name() const { return outputs.empty() ? target : outputs.front().name; }

static const ValueMeta* find_meta(const std::vector<Node>& nodes, const std::string& n) {
  for (const auto& node : nodes) {
    for (const auto& v : node.outputs)
      if (v.name == n) return &v.meta;
    for (const auto& b : node.blocks) {
      for (const auto& p : b.params)
        if (p.name == n) return &p.meta;
      if (const auto* m = find_meta(b.nodes, n)) return m;
    }
  }
  return nullptr;
}

const ValueMeta* Graph::meta_of(const std::string& value_name) const { return find_meta(nodes, value_name); }

static void collect_calls(const std::vector<Node>& nodes, std::vector<const Node*>& out) {
  for (const auto& n : nodes) {
    if (n.op == NodeOp::CallFunction) out.push_back(&n);
    for (const auto& b : n.blocks) collect_calls(b.nodes, out);
  }
}

std::vector<const Node*> Graph::call_nodes() const {
  std::vector<const Node*> out;
  collect_calls(nodes, out);
  return out;
}

std::map<std::string, int> Graph::op_histogram() const {
  std::map<std::string, int> h;
  for (const auto* n : call_nodes()) ++h[n->target];
  return h;
}

namespace {
struct Verifier {
  std::vector<std::string> problems;
  std::set<std::string> defined;

  void use(const Arg& a, const std::string& where) {
    if (a.kind == Arg::Kind::Ref && !defined.count(a.ref))
      problems.push_back(where + " uses %" + a.ref + " before it is defined");
    for (const auto& it : a.items) use(it, where);
  }
  void define(const Value& v, const std::string& where) {
    if (v.name.empty()) problems.push_back(where + " defines a value with no name");
    else if (!defined.insert(v.name).second) problems.push_back(where + " redefines %" + v.name);
  }
  void nodes(const std::vector<Node>& ns, bool top) {
    for (size_t i = 0; i < ns.size(); ++i) {
      const Node& n = ns[i];
      std::string where = std::string(node_op_name(n.op)) + " " + n.target;
      for (const auto& a : n.args) use(a, where);
      for (const auto& kw : n.kwargs) use(kw.second, where);
      for (const auto& b : n.blocks) {
        std::set<std::string> saved = defined;
        for (const auto& p : b.params) define(p, where + " block");
        this->nodes(b.nodes, false);
        for (const auto& r : b.returns) use(r, where + " block return");
        defined = saved;
      }
      for (const auto& v : n.outputs) define(v, where);
      if (!top && (n.op == NodeOp::Placeholder || n.op == NodeOp::Output))
        problems.push_back(where + " appears inside a block");
    }
  }
};
}  // namespace

std::vector<std::string> verify(const Graph& g) {
  Verifier v;
  bool seen_other = false;
  int outputs = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.op == NodeOp::Placeholder && seen_other)
      v.problems.push_back("placeholder " + n.target + " comes after other nodes");
    if (n.op != NodeOp::Placeholder) seen_other = true;
    if (n.op == NodeOp::Output) {
      ++outputs;
      if (i + 1 != g.nodes.size()) v.problems.push_back("output node is not last");
    }
  }
  if (outputs != 1) v.problems.push_back("graph has " + std::to_string(outputs) + " output nodes, expected 1");
  v.nodes(g.nodes, true);
  return v.problems;
}

}  // namespace kiln::ir
