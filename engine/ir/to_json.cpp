#include "engine/ir/to_json.h"

#include <nlohmann/json.hpp>

namespace kiln::ir {

using nlohmann::ordered_json;

namespace {

ordered_json arg_json(const Arg& a) {
  switch (a.kind) {
    case Arg::Kind::Ref: return ordered_json{{"ref", a.ref}};
    case Arg::Kind::None: return nullptr;
    case Arg::Kind::Bool: return a.b;
    case Arg::Kind::Int: return a.i;
    case Arg::Kind::Float: return a.f;
    case Arg::Kind::Str: return ordered_json{{"str", a.s}};
    case Arg::Kind::List: {
      ordered_json l = ordered_json::array();
      for (const auto& it : a.items) l.push_back(arg_json(it));
      return l;
    }
    case Arg::Kind::Other: return ordered_json{{"literal", a.s}};
  }
  return nullptr;
}

ordered_json meta_json(const ValueMeta& m) {
  ordered_json j;
  j["type"] = m.type_name;
  if (m.is_tensor()) {
    j["dtype"] = dtype_name(m.dtype);
    ordered_json shape = ordered_json::array();
    for (const auto& d : m.shape) {
      if (d.is_symbolic()) shape.push_back(d.symbol);
      else shape.push_back(d.value);
    }
    j["shape"] = shape;
    j["stride"] = m.stride;
    j["device"] = m.device;
    j["requires_grad"] = m.requires_grad;
  } else if (!m.scalar_value.empty()) {
    j["value"] = m.scalar_value;
  }
  return j;
}

ordered_json loc_json(const SourceLoc& l) {
  if (!l.known()) return nullptr;
  return ordered_json{{"file", l.file}, {"line", l.line}, {"col", l.col}, {"text", l.text}};
}

ordered_json values_json(const std::vector<Value>& vs) {
  ordered_json a = ordered_json::array();
  for (const auto& v : vs) a.push_back(ordered_json{{"name", v.name}, {"meta", meta_json(v.meta)}});
  return a;
}

ordered_json nodes_json(const std::vector<Node>& ns) {
  ordered_json arr = ordered_json::array();
  for (const auto& n : ns) {
    ordered_json j;
    j["op"] = node_op_name(n.op);
    j["name"] = n.outputs.empty() ? "" : n.name();
    j["target"] = n.target;
    ordered_json args = ordered_json::array();
    for (const auto& a : n.args) args.push_back(arg_json(a));
    j["args"] = args;
    ordered_json kwargs = ordered_json::object();
    for (const auto& kw : n.kwargs) kwargs[kw.first] = arg_json(kw.second);
    j["kwargs"] = kwargs;
    j["outputs"] = values_json(n.outputs);
    j["module"] = n.module_path;
    j["source"] = loc_json(n.loc);
    j["op_source"] = loc_json(n.op_loc);
    if (!n.note.empty()) j["note"] = n.note;
    if (!n.blocks.empty()) {
      ordered_json blocks = ordered_json::array();
      for (const auto& b : n.blocks) {
        ordered_json rets = ordered_json::array();
        for (const auto& r : b.returns) rets.push_back(arg_json(r));
        blocks.push_back(ordered_json{{"params", values_json(b.params)}, {"nodes", nodes_json(b.nodes)}, {"returns", rets}});
      }
      j["blocks"] = blocks;
    }
    arr.push_back(std::move(j));
  }
  return arr;
}

}  // namespace

std::string to_json(const Graph& g, int indent) {
  ordered_json j;
  j["name"] = g.name;
  j["nodes"] = nodes_json(g.nodes);
  return j.dump(indent, ' ', false, ordered_json::error_handler_t::replace);
}

}  // namespace kiln::ir
