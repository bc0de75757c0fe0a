// Graph breaks removed where that is sound; see what_if.h.
#include "engine/capture/what_if.h"

#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/api/function_impl.h>
#include <torch/csrc/jit/runtime/operator.h>

#include <array>
#include <map>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "engine/base/error.h"
#include "engine/model/scoped_print_handler.h"

namespace kiln::capture {

using torch::jit::Block;
using torch::jit::Graph;
using torch::jit::Node;
using torch::jit::Value;

const char* removal_kind_name(BreakRemoval::Kind k) {
  switch (k) {
    case BreakRemoval::Kind::DropPrint: return "drop_print";
    case BreakRemoval::Kind::ScalarAsTensor: return "scalar_as_tensor";
    case BreakRemoval::Kind::BranchAsWhere: return "branch_as_where";
    case BreakRemoval::Kind::None: return "none";
  }
  return "none";
}

namespace {

bool is_tensor(const Value* v) { return v->type()->kind() == c10::TypeKind::TensorType; }

std::string qual(const Node* n) { return n->kind().toQualString(); }

// The line of a node, for reasons: " (line 43)", or "" when unknown.
std::string at_line(const Node* n) {
  auto r = n->sourceRange().findSourceRangeThatGenerated();
  const auto& range = r ? *r : n->sourceRange();
  if (!range.source()) return "";
  auto loc = range.file_line_col();
  if (!loc) return "";
  return " (line " + std::to_string(std::get<1>(*loc)) + ")";
}

// "aten::mul(float, float)": an op with its argument types, as reasons name it.
std::string signature(const Node* n) {
  std::string s = qual(n) + "(";
  for (size_t i = 0; i < n->inputs().size(); ++i) s += (i ? ", " : "") + n->input(i)->type()->annotation_str();
  return s + ")";
}

// Scalar reads that become a 0-d tensor, and the dtype the tensor takes (nullopt: the tensor's own).
bool is_scalar_read(const Node* n) {
  static const std::set<std::string> ops = {"aten::item", "aten::Float", "aten::Int", "aten::Bool",
                                            "aten::ScalarImplicit", "aten::FloatImplicit", "aten::IntImplicit"};
  return ops.count(qual(n)) && n->inputs().size() == 1 && is_tensor(n->input(0)) && n->outputs().size() == 1;
}

// Conversions between numbers (float(s), int(s), bool(s) of a number): they follow the 0-d tensor.
bool is_number_conversion(const Node* n) {
  static const std::set<std::string> ops = {"aten::Float", "aten::Int", "aten::Bool"};
  return ops.count(qual(n)) && n->inputs().size() == 1 && !is_tensor(n->input(0)) && n->outputs().size() == 1;
}

std::optional<at::ScalarType> dtype_of_conversion(const Node* n) {
  const std::string q = qual(n);
  if (q == "aten::Float" || q == "aten::FloatImplicit") return at::kDouble;
  if (q == "aten::Int" || q == "aten::IntImplicit") return at::kLong;
  if (q == "aten::Bool") return at::kBool;
  return std::nullopt;
}

// Whether an overload of `user`'s op takes a tensor at every offset in `offsets` (the other inputs as
// they are) and returns values that fit where the current outputs are used.
bool has_tensor_overload(const Node* user, const std::vector<size_t>& offsets) {
  for (const auto& op : torch::jit::getAllOperatorsFor(user->kind())) {
    const auto& schema = op->schema();
    if (schema.is_vararg() || schema.is_varret()) continue;
    const auto& args = schema.arguments();
    if (args.size() < user->inputs().size() || schema.returns().size() != user->outputs().size()) continue;
    bool fits = true;
    for (size_t j = 0; j < args.size() && fits; ++j) {
      if (j >= user->inputs().size()) {
        fits = args[j].default_value().has_value();
        continue;
      }
      bool replaced = std::find(offsets.begin(), offsets.end(), j) != offsets.end();
      c10::TypePtr t = replaced ? c10::TypePtr(c10::TensorType::get()) : user->input(j)->type();
      fits = t->isSubtypeOf(*args[j].type());
    }
    for (size_t k = 0; k < user->outputs().size() && fits; ++k)
      fits = schema.returns()[k].type()->isSubtypeOf(*user->output(k)->type());
    if (fits) return true;
  }
  return false;
}

// Why the number `v` cannot become a 0-d tensor where it is used; "" when it can.
std::string tensor_users_refusal(const Value* v, const Graph& graph) {
  std::map<const Node*, std::vector<size_t>> offsets;
  std::vector<const Node*> order;
  for (const auto& u : v->uses()) {
    if (!offsets.count(u.user)) order.push_back(u.user);
    offsets[u.user].push_back(u.offset);
  }
  for (const Node* user : order) {
    if (is_number_conversion(user)) {
      auto why = tensor_users_refusal(user->output(), graph);
      if (!why.empty()) return why;
      continue;
    }
    const auto k = user->kind();
    if (k == c10::prim::Return)
      return user->owningBlock() == graph.block() ? "forward returns the value as a number"
                                                  : "the value leaves an if or loop body as a number";
    if (k == c10::prim::If) return "the value decides an if" + at_line(user) + ", which needs a Python bool";
    if (k == c10::prim::Loop) return "the value drives a loop" + at_line(user) + ", which needs a number";
    if (!has_tensor_overload(user, offsets[user]))
      return "the value is used by " + signature(user) + at_line(user) +
             ", which has no overload taking a tensor in its place";
  }
  return "";
}

bool inside(const Node* n, const Node* outer) {
  for (const Node* p = n; p; p = p->owningBlock() ? p->owningBlock()->owningNode() : nullptr)
    if (p == outer) return true;
  return false;
}

// The tensor whose truth value decides `ifn`, and whether the blocks swap (`not`); null when the
// condition is something else.
std::pair<const Value*, bool> condition_tensor(const Node* ifn) {
  const Value* c = ifn->input(0);
  bool negate = false;
  while (c->node()->kind() == c10::aten::__not__) {
    negate = !negate;
    c = c->node()->input(0);
  }
  const Node* p = c->node();
  const std::string q = qual(p);
  if ((q == "aten::Bool" || q == "aten::is_nonzero") && p->inputs().size() == 1 && is_tensor(p->input(0)))
    return {p->input(0), negate};
  return {nullptr, false};
}

// Why running this block unconditionally could change what the program does; "" when it cannot.
std::string impurity(const Block* b) {
  static const std::set<std::string> effects = {"prim::Print", "aten::warn", "prim::SetAttr", "aten::manual_seed",
                                                "prim::Enter", "prim::Exit", "prim::CallFunction",
                                                "prim::CallMethod", "prim::PythonOp"};
  for (const Node* n : b->nodes()) {
    const std::string q = qual(n);
    if (n->kind() == c10::prim::RaiseException) return "raises an exception" + at_line(n);
    if (effects.count(q)) return "has a side effect, " + q + at_line(n);
    const auto* schema = n->maybeSchema();
    if ((schema && schema->is_mutable()) || (q.size() > 1 && q.back() == '_' && q[q.size() - 2] != '_'))
      return "changes a tensor in place, " + q + at_line(n);
    for (const Block* sub : n->blocks()) {
      auto why = impurity(sub);
      if (!why.empty()) return why;
    }
  }
  return "";
}

void match_nodes(const Block* a, Block* b, std::unordered_map<const Node*, Node*>& m) {
  auto ia = a->nodes().begin();
  auto ib = b->nodes().begin();
  for (; ia != a->nodes().end() && ib != b->nodes().end(); ++ia, ++ib) {
    m[*ia] = *ib;
    for (size_t k = 0; k < ia->blocks().size() && k < ib->blocks().size(); ++k)
      match_nodes(ia->blocks()[k], ib->blocks()[k], m);
  }
}

// Inserts copies of both blocks' nodes of `ifn` at the insertion point; per block, the values it yields.
std::array<std::vector<Value*>, 2> inline_both_blocks(Graph& g, Node* ifn) {
  std::array<std::vector<Value*>, 2> outs;
  for (size_t b = 0; b < 2; ++b) {
    std::unordered_map<Value*, Value*> env;
    auto map = [&](Value* v) {
      auto it = env.find(v);
      return it == env.end() ? v : it->second;
    };
    for (Node* n : ifn->blocks()[b]->nodes()) {
      Node* c = g.insertNode(g.createClone(n, map));
      for (size_t i = 0; i < n->outputs().size(); ++i) env[n->output(i)] = c->output(i);
    }
    for (Value* r : ifn->blocks()[b]->outputs()) outs[b].push_back(map(r));
  }
  return outs;
}

std::string sizes_text(at::IntArrayRef s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

// Why the blocks' outputs of `ifn` may differ in shape or dtype; "" when they agree for every example.
// Checked by running: a copy of the program returns what both blocks yield, each example run through it.
std::string shape_refusal(const Graph& graph, const Node* ifn, const WhatIfExamples& examples) {
  if (ifn->outputs().empty()) return "";
  if (examples.calls.empty()) return "no example inputs to compare the shapes the two branches produce";
  if (ifn->owningBlock() != graph.block())
    return "the branch sits inside a loop or another if, where Kiln does not check the two branches' shapes";
  auto probe = const_cast<Graph&>(graph).copy();
  std::unordered_map<const Node*, Node*> m;
  match_nodes(graph.block(), probe->block(), m);
  Node* p = m.at(ifn);
  std::array<std::vector<Value*>, 2> outs;
  {
    torch::jit::WithInsertPoint ip(p);
    outs = inline_both_blocks(*probe, p);
  }
  while (!probe->outputs().empty()) probe->eraseOutput(probe->outputs().size() - 1);
  std::vector<Value*> yielded;
  for (size_t j = 0; j < outs[0].size(); ++j) {
    yielded.push_back(outs[0][j]);
    yielded.push_back(outs[1][j]);
  }
  probe->registerOutput(probe->insertNode(probe->createTuple(yielded))->output());
  model::ScopedPrintHandler quiet;
  std::string why;
  try {
    torch::jit::GraphFunction fn("what_if_probe", probe, nullptr);
    for (const auto& example : examples.calls) {
      if (probe->inputs().size() != example.size() + 1) {
        why = "the example inputs do not fit forward's arguments";
        break;
      }
      std::vector<c10::IValue> stack{examples.self};
      stack.insert(stack.end(), example.begin(), example.end());
      fn.run(stack);
      auto values = stack.front().toTuple()->elements();
      for (size_t j = 0; j < outs[0].size() && why.empty(); ++j) {
        const auto& a = values[2 * j].toTensor();
        const auto& b = values[2 * j + 1].toTensor();
        const std::string name = user_name(ifn->output(j));
        if (a.sizes() != b.sizes())
          why = "the branches give " + name + " different shapes (" + sizes_text(a.sizes()) + " and " +
                sizes_text(b.sizes()) + ")";
        else if (a.scalar_type() != b.scalar_type())
          why = "the branches give " + name + " different dtypes (" + std::string(c10::toString(a.scalar_type())) +
                " and " + c10::toString(b.scalar_type()) + ")";
      }
      if (!why.empty()) break;
    }
  } catch (const std::exception& e) {
    std::string msg = e.what();
    why = "running both branches on the example inputs failed: " + msg.substr(0, msg.find('\n'));
  }
  return why;
}

BreakRemoval refuse(std::string why) {
  BreakRemoval r;
  r.why_not = std::move(why);
  return r;
}

BreakRemoval plan_one(const Graph& graph, const Partition& p, size_t index,
                      const WhatIfExamples& examples) {
  const GraphBreak& b = p.breaks[index];
  const Node* n = index < p.break_nodes.size() ? p.break_nodes[index] : nullptr;
  if (!n) return refuse("the break's node is not known");
  BreakRemoval r;
  switch (b.category) {
    case BreakCategory::SideEffect:
      if (n->kind() != c10::prim::Print)
        return refuse(qual(n) + " changes state outside the model; dropping it would change what the program does");
      r.kind = BreakRemoval::Kind::DropPrint;
      r.change = "drop the print (the program no longer prints its text)";
      return r;
    case BreakCategory::ScalarExtraction: {
      if (!is_scalar_read(n))
        return refuse(qual(n) + " makes a " + n->output(0)->type()->annotation_str() +
                      ", which has no 0-d tensor form");
      auto why = tensor_users_refusal(n->output(), graph);
      if (!why.empty()) return refuse(why);
      r.kind = BreakRemoval::Kind::ScalarAsTensor;
      auto dt = dtype_of_conversion(n);
      r.change = "keep " + std::string(n->kind().toUnqualString()) + "() as a 0-d " +
                 (dt ? std::string(c10::toString(*dt)) : std::string("tensor of its dtype")) +
                 (dt ? " tensor" : "") + " in the ops that use it";
      return r;
    }
    case BreakCategory::DataDependentBranch: {
      if (n->kind() != c10::prim::If || n->blocks().size() != 2) return refuse("not an if with two branches");
      auto [cond, negate] = condition_tensor(n);
      (void)negate;
      if (!cond) {
        const Node* c = n->input(0)->node();
        return refuse("the condition comes from " + qual(c) + at_line(c) +
                      ", not from bool() of one tensor, so there is no tensor to select with");
      }
      for (size_t i = 0; i < p.breaks.size(); ++i)
        if (i != index && i < p.break_nodes.size() && p.break_nodes[i] != n && inside(p.break_nodes[i], n))
          return refuse("a branch holds a graph break of its own (" + p.breaks[i].id + " at line " +
                        std::to_string(p.breaks[i].loc.line) + ")");
      for (size_t k = 0; k < 2; ++k) {
        auto why = impurity(n->blocks()[k]);
        if (!why.empty()) return refuse(std::string(k == 0 ? "the then-branch " : "the else-branch ") + why);
      }
      for (const Value* o : n->outputs())
        if (!is_tensor(o))
          return refuse("the branches produce " + user_name(o) + ", a " + o->type()->annotation_str() +
                        ", not a tensor");
      auto why = shape_refusal(graph, n, examples);
      if (!why.empty()) return refuse(why);
      r.kind = BreakRemoval::Kind::BranchAsWhere;
      r.change = "run both branches and select " + std::to_string(n->outputs().size()) + " output" +
                 (n->outputs().size() == 1 ? "" : "s") + " with where(condition, then, else)";
      return r;
    }
    case BreakCategory::DataDependentLoop:
      return refuse("the loop's trip count depends on a tensor's value; no rewrite makes it static "
                    "(loop a fixed number of times and mask instead)");
    case BreakCategory::OpaqueCall:
      return refuse(b.op == "prim::Loop" ? "the loop body holds a graph break; fix that one first"
                                         : "Kiln cannot see into " + b.op + ", so it cannot tell what removing it changes");
    case BreakCategory::UnrollLimit:
      return refuse("not removable by a rewrite: a larger --unroll-limit captures the loop");
  }
  return refuse("unknown kind of break");
}

// Inserts `kind(args)` before the insertion point, the node carrying `like`'s source line.
Value* emit(Graph& g, c10::Symbol kind, std::vector<torch::jit::NamedValue> args, const Node* like) {
  Value* v = g.insert(kind, args, {}, like->sourceRange());
  v->node()->setSourceRange(like->sourceRange());
  if (like->callstack()) v->node()->setCallStack(*like->callstack());
  return v;
}

Value* to_dtype(Graph& g, Value* x, at::ScalarType dtype, bool copy, const Node* like) {
  return emit(g, c10::aten::to, {x, static_cast<int64_t>(dtype), false, copy}, like);
}

bool removable_when_unused(const Node* n) {
  if (n->kind() == c10::prim::Param || n->kind() == c10::prim::Return || !n->blocks().empty()) return false;
  for (const Value* o : n->outputs())
    if (o->hasUses()) return false;
  if (n->kind() == c10::prim::Print || n->kind() == c10::prim::RaiseException || n->hasSideEffects()) return false;
  const auto* schema = n->maybeSchema();
  return !(schema && schema->is_mutable());
}

void live_nodes(Block* b, std::vector<Node*>& out) {
  for (Node* n : b->nodes()) {
    out.push_back(n);
    for (Block* sub : n->blocks()) live_nodes(sub, out);
  }
}

// Removes the `candidates` (nodes whose inputs a rewrite took away) that nothing uses any more and whose
// running has no effect, then their producers in turn. Candidates are only compared, never followed:
// some may have been destroyed already.
void drop_unused(Graph& g, std::unordered_set<const Node*> candidates) {
  for (bool changed = true; changed;) {
    changed = false;
    std::vector<Node*> nodes;
    live_nodes(g.block(), nodes);
    for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
      Node* n = *it;
      if (!candidates.count(n) || !removable_when_unused(n)) continue;
      for (Value* in : n->inputs()) candidates.insert(in->node());
      candidates.erase(n);
      n->destroy();
      changed = true;
    }
  }
}

std::unordered_set<const Node*> producers(const Node* n) {
  std::unordered_set<const Node*> out;
  for (const Value* in : n->inputs()) out.insert(in->node());
  return out;
}

// Every use of the number `v` takes `tensor` instead; number conversions become dtype conversions.
void replace_number(Graph& g, Value* v, Value* tensor) {
  std::vector<Node*> users;
  for (const auto& u : v->uses())
    if (std::find(users.begin(), users.end(), u.user) == users.end()) users.push_back(u.user);
  for (Node* user : users) {
    if (is_number_conversion(user)) {
      torch::jit::WithInsertPoint ip(user);
      replace_number(g, user->output(), to_dtype(g, tensor, *dtype_of_conversion(user), false, user));
      user->destroy();
    } else {
      user->replaceInputWith(v, tensor);
    }
  }
}

void keep_scalar_as_tensor(Graph& g, Node* read) {
  torch::jit::WithInsertPoint ip(read);
  // reshape to 0-d fails where item() fails (not one element); the copy keeps the value as it was read
  // should a later op change the tensor in place.
  Value* t = emit(g, c10::aten::reshape, {read->input(0), c10::IValue(std::vector<int64_t>{})}, read);
  auto dt = dtype_of_conversion(read);
  t = dt ? to_dtype(g, t, *dt, true, read) : emit(g, c10::aten::clone, {t}, read);
  replace_number(g, read->output(), t);
  read->destroy();
}

void both_branches_where(Graph& g, Node* ifn) {
  auto [cond_c, negate] = condition_tensor(ifn);
  Value* cond_tensor = const_cast<Value*>(cond_c);
  torch::jit::WithInsertPoint ip(ifn);
  Value* cond = emit(g, c10::aten::reshape, {cond_tensor, c10::IValue(std::vector<int64_t>{})}, ifn);
  cond = to_dtype(g, cond, at::kBool, false, ifn);
  auto outs = inline_both_blocks(g, ifn);
  for (size_t j = 0; j < ifn->outputs().size(); ++j) {
    Value* then_v = outs[negate ? 1 : 0][j];
    Value* else_v = outs[negate ? 0 : 1][j];
    Value* w = emit(g, c10::aten::where, {cond, then_v, else_v}, ifn);
    w->copyMetadata(ifn->output(j));
    ifn->output(j)->replaceAllUsesWith(w);
  }
  auto candidates = producers(ifn);
  ifn->destroy();
  drop_unused(g, candidates);
}

}  // namespace

std::vector<BreakRemoval> plan_break_removals(const Graph& graph, const Partition& partition,
                                              const WhatIfExamples& examples) {
  std::vector<BreakRemoval> out;
  for (size_t i = 0; i < partition.breaks.size(); ++i) out.push_back(plan_one(graph, partition, i, examples));
  return out;
}

std::shared_ptr<Graph> remove_breaks(const Graph& graph, SourceFiles& sources, const std::vector<int>& breaks,
                                     const WhatIfExamples& examples) {
  auto g = const_cast<Graph&>(graph).copy();
  Partition p = partition_graph(*g, sources);
  auto plan = plan_break_removals(*g, p, examples);
  for (int b : breaks) {
    if (b < 0 || static_cast<size_t>(b) >= plan.size())
      throw Error("graph break " + std::to_string(b) + ": the model has " + std::to_string(plan.size()) + " breaks");
    if (!plan[b].removable())
      throw Error("graph break " + p.breaks[b].id + " at " + p.breaks[b].loc.str() +
                  " cannot be removed soundly: " + plan[b].why_not);
  }
  // The partition's nodes are the copy's; no rewrite touches another listed break's node (a branch with
  // a break inside is not removable).
  for (int b : breaks) {
    Node* n = const_cast<Node*>(p.break_nodes[b]);
    std::vector<Node*> live;
    live_nodes(g->block(), live);
    if (std::find(live.begin(), live.end(), n) == live.end()) continue;  // went with an earlier rewrite
    switch (plan[b].kind) {
      case BreakRemoval::Kind::DropPrint: {
        auto candidates = producers(n);
        n->destroy();
        drop_unused(*g, candidates);
        break;
      }
      case BreakRemoval::Kind::ScalarAsTensor: keep_scalar_as_tensor(*g, n); break;
      case BreakRemoval::Kind::BranchAsWhere: both_branches_where(*g, n); break;
      case BreakRemoval::Kind::None: break;
    }
  }
  g->lint();
  return g;
}

}  // namespace kiln::capture
