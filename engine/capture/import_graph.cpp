#include "engine/capture/import_graph.h"

#include <cctype>
#include <set>

#include "engine/capture/torch_meta.h"

namespace kiln::capture {

using torch::jit::Node;
using torch::jit::Value;

void observe_outputs(const Node* node, const std::vector<c10::IValue>& outs, ObservedMeta& into) {
  for (size_t i = 0; i < node->outputs().size() && i < outs.size(); ++i) into[node->output(i)] = meta_of(outs[i]);
}

namespace {

bool is_mutating_list_user(const Node* n) {
  static const std::set<std::string> mut = {"aten::append", "aten::insert", "aten::extend", "aten::_set_item",
                                            "aten::__setitem__", "aten::pop", "aten::clear", "aten::reverse",
                                            "aten::sort", "aten::remove"};
  return mut.count(n->kind().toQualString()) > 0;
}

struct Importer {
  const ObservedMeta& observed;
  SourceFiles& sources;
  std::unordered_map<const Value*, std::string> names;
  std::unordered_map<const Value*, ir::Arg> literals;
  std::set<std::string> used;
  std::vector<ir::Node> attrs;  // get_attr nodes, emitted after placeholders

  std::string unique(std::string base) {
    if (base.empty()) base = "v";
    if (std::isdigit(static_cast<unsigned char>(base[0]))) base = "v" + base;
    if (used.insert(base).second) return base;
    for (int i = 1;; ++i) {
      std::string n = base + "_" + std::to_string(i);
      if (used.insert(n).second) return n;
    }
  }

  // FX-like names: the variable's name when TorchScript kept one, else the op's name.
  std::string name_for(const Value* v) {
    std::string dbg = v->debugName();
    bool numeric = !dbg.empty() && std::all_of(dbg.begin(), dbg.end(), [](char c) { return std::isdigit(c); });
    if (!v->hasDebugName() || numeric) {
      std::string op = v->node()->kind().toUnqualString();
      std::string base;
      for (char c : op) base += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
      while (!base.empty() && base[0] == '_') base.erase(0, 1);
      return unique(base);
    }
    auto dot = dbg.find('.');
    std::string stem = dot == std::string::npos ? dbg : dbg.substr(0, dot);
    for (auto& c : stem)
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) c = '_';
    return unique(stem);
  }

  ir::ValueMeta meta(const Value* v) {
    auto it = observed.find(v);
    if (it != observed.end()) {
      ir::ValueMeta m = it->second;
      if (m.type_name.empty() || m.kind == ir::ValueMeta::Kind::Tensor) m.type_name = v->type()->annotation_str();
      return m;
    }
    return meta_of_type(v->type());
  }

  ir::Value define(const Value* v) {
    std::string n = name_for(v);
    names[v] = n;
    return ir::Value{n, meta(v)};
  }

  ir::Arg arg(const Value* v) {
    auto lit = literals.find(v);
    if (lit != literals.end()) return lit->second;
    auto it = names.find(v);
    return ir::Arg::value(it == names.end() ? v->debugName() : it->second);
  }

  bool inlinable_list(const Node* n) {
    if (n->kind() != c10::prim::ListConstruct) return false;
    for (const auto& use : n->output()->uses()) {
      if (is_mutating_list_user(use.user) || use.user->kind() == c10::prim::Return ||
          use.user->owningBlock() != n->owningBlock())
        return false;
    }
    return true;
  }

  void origin(const Node* n, ir::Node& out) {
    auto o = node_origin(n, sources);
    out.loc = o.loc;
    out.op_loc = o.op_loc;
    out.module_path = o.module_path;
  }

  void block(const torch::jit::Block* b, std::vector<ir::Node>& out) {
    for (const Node* n : b->nodes()) {
      if (n->kind() == c10::prim::Constant) {
        auto iv = torch::jit::toIValue(n->output());
        if (iv && iv->isTensor()) {
          ir::Node g;
          g.op = ir::NodeOp::GetAttr;
          std::string dbg = n->output()->debugName();
          if (dbg.rfind("self.", 0) == 0) dbg = dbg.substr(5);
          auto dot = dbg.find_last_of('.');
          if (dot != std::string::npos && std::all_of(dbg.begin() + dot + 1, dbg.end(), ::isdigit) &&
              dot + 1 < dbg.size())
            dbg = dbg.substr(0, dot);  // "l1.weight.3" -> "l1.weight"
          g.target = dbg;
          std::string n2 = dbg;
          for (auto& c : n2)
            if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) c = '_';
          ir::Value v{unique(n2), meta_of(*iv)};
          names[n->output()] = v.name;
          g.outputs.push_back(std::move(v));
          if (b == b->owningGraph()->block()) attrs.push_back(std::move(g));
          else out.push_back(std::move(g));
          continue;
        }
        if (iv) {
          if (auto lit = literal_arg(*iv)) {
            literals[n->output()] = *lit;
            continue;
          }
        }
      }
      if (inlinable_list(n)) {
        std::vector<ir::Arg> items;
        for (const Value* v : n->inputs()) items.push_back(arg(v));
        literals[n->output()] = ir::Arg::list(std::move(items));
        continue;
      }
      ir::Node node;
      node.op = ir::NodeOp::CallFunction;
      node.target = n->kind().toQualString();
      for (const Value* v : n->inputs()) node.args.push_back(arg(v));
      if (n->kind() == c10::prim::GetAttr) node.kwargs.emplace_back("name", ir::Arg::string(n->s(c10::attr::name)));
      origin(n, node);
      for (const auto* sub : n->blocks()) {
        ir::Block blk;
        for (const Value* p : sub->inputs()) blk.params.push_back(define(p));
        block(sub, blk.nodes);
        for (const Value* r : sub->outputs()) blk.returns.push_back(arg(r));
        node.blocks.push_back(std::move(blk));
      }
      for (const Value* o : n->outputs()) node.outputs.push_back(define(o));
      out.push_back(std::move(node));
    }
  }
};

}  // namespace

ir::Graph import_graph(const torch::jit::Graph& graph, const ObservedMeta& observed, SourceFiles& sources) {
  Importer im{observed, sources, {}, {}, {}, {}};
  ir::Graph g;
  g.name = "forward";
  std::vector<ir::Node> placeholders;
  const auto& inputs = graph.inputs();
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Value* v = inputs[i];
    if (i == 0 && v->type()->kind() == c10::TypeKind::ClassType) {
      im.names[v] = "self";
      continue;
    }
    ir::Node p;
    p.op = ir::NodeOp::Placeholder;
    p.outputs.push_back(im.define(v));
    p.target = p.outputs.back().name;
    placeholders.push_back(std::move(p));
  }
  std::vector<ir::Node> body;
  im.block(graph.block(), body);
  for (auto& p : placeholders) g.nodes.push_back(std::move(p));
  for (auto& a : im.attrs) g.nodes.push_back(std::move(a));
  for (auto& n : body) g.nodes.push_back(std::move(n));
  ir::Node out;
  out.op = ir::NodeOp::Output;
  out.target = "output";
  for (const Value* v : graph.outputs()) out.args.push_back(im.arg(v));
  g.nodes.push_back(std::move(out));
  return g;
}

}  // namespace kiln::capture
