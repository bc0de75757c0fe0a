#include "engine/lowering/functionalize.h"

#include <functional>
#include <map>
#include <set>

#include "engine/lowering/lowering_context.h"

namespace kiln::lowering {

namespace {

bool is_view_op(const std::string& t) {
  static const std::set<std::string> ops = {
      "aten::view",    "aten::reshape", "aten::slice",    "aten::select",    "aten::transpose", "aten::permute",
      "aten::unsqueeze", "aten::squeeze", "aten::expand", "aten::narrow",  "aten::as_strided", "aten::flatten",
      "aten::t",       "aten::unflatten", "aten::expand_as", "aten::view_as", "aten::reshape_as", "aten::split",
      "aten::chunk",   "aten::unbind",  "aten::diagonal", "aten::movedim",  "aten::detach",    "aten::alias",
      "aten::contiguous"};
  return ops.count(t) > 0;
}

void rename(ir::Arg& a, const std::string& from, const std::string& to) {
  if (a.kind == ir::Arg::Kind::Ref && a.ref == from) a.ref = to;
  for (auto& it : a.items) rename(it, from, to);
}

bool refers(const ir::Arg& a, const std::string& name) {
  if (a.kind == ir::Arg::Kind::Ref && a.ref == name) return true;
  for (const auto& it : a.items)
    if (refers(it, name)) return true;
  return false;
}

}  // namespace

bool is_inplace_op(const std::string& target) {
  auto p = target.find("::");
  if (p == std::string::npos || target.compare(0, p, "aten") != 0) return false;
  std::string fn = target.substr(p + 2);
  return fn.size() > 1 && fn.back() == '_' && fn.compare(0, 2, "__") != 0;
}

ir::Graph functionalize(const ir::Graph& graph) {
  ir::Graph g = graph;
  std::map<std::string, size_t> producer;  // value -> node index
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    ir::Node& n = g.nodes[i];
    if (n.op != ir::NodeOp::Output && is_inplace_op(n.target) && !n.args.empty() &&
        n.args[0].kind == ir::Arg::Kind::Ref && n.outputs.size() == 1) {
      const std::string mutated = n.args[0].ref, result = n.outputs[0].name;
      auto p = producer.find(mutated);
      const ir::Node* src = p == producer.end() ? nullptr : &g.nodes[p->second];
      bool input_or_param = !src || src->op == ir::NodeOp::Placeholder || src->op == ir::NodeOp::GetAttr;
      if (!input_or_param) {
        auto used_after = [&](const std::string& v) {
          for (size_t j = i + 1; j < g.nodes.size(); ++j)
            for (const auto& a : g.nodes[j].args)
              if (refers(a, v)) return true;
          return false;
        };
        // Through a view (or a view of a view: x[a:b][:, c:d].fill_(v) is slice(slice(x))): every base up
        // the chain sees the mutation in eager; refuse when anything reads one of them later.
        for (const ir::Node* view = src; view && is_view_op(view->target) && !view->args.empty() &&
                                         view->args[0].kind == ir::Arg::Kind::Ref;) {
          const std::string& base = view->args[0].ref;
          if (used_after(base))
            throw LoweringError(n.target + " (" + n.name() + ") mutates a view of " + base + ", which is read afterwards");
          auto up = producer.find(base);
          view = up == producer.end() ? nullptr : &g.nodes[up->second];
        }
        // Views taken of the mutated value before the op see the mutation in eager too.
        for (size_t j = 0; j < i; ++j) {
          const ir::Node& v = g.nodes[j];
          if (is_view_op(v.target) && !v.args.empty() && refers(v.args[0], mutated))
            for (const auto& o : v.outputs)
              if (used_after(o.name))
                throw LoweringError(n.target + " (" + n.name() + ") mutates " + mutated + ", whose view " + o.name +
                                    " is read afterwards");
        }
        for (size_t j = i + 1; j < g.nodes.size(); ++j)
          for (auto& a : g.nodes[j].args) rename(a, mutated, result);
      }
    }
    for (const auto& o : n.outputs) producer[o.name] = i;
  }
  return g;
}

}  // namespace kiln::lowering
