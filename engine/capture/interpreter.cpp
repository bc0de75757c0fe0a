#include "engine/capture/interpreter.h"

#include <iostream>
#include <sstream>

#include "engine/base/error.h"

namespace kiln::capture {

Interpreter::Interpreter(std::shared_ptr<torch::jit::Graph> graph) : graph_(std::move(graph)) {}

torch::jit::Operation& Interpreter::operation(const Node* node) {
  auto it = ops_.find(node);
  if (it != ops_.end()) return it->second;
  auto op = node->getOperation();
  return ops_.emplace(node, std::move(op)).first->second;
}

static bool is_vararg_operation(const Node* node) {
  const auto* op = node->maybeOperator();
  return op && op->hasOperation() && op->schema().is_vararg();
}

bool Interpreter::vararg(const Node* node) {
  auto it = vararg_.find(node);
  if (it != vararg_.end()) return it->second;
  return vararg_.emplace(node, is_vararg_operation(node)).first->second;
}

static std::string first_line(const std::string& s) {
  size_t b = s.find_first_not_of(" \n\t");
  if (b == std::string::npos) return "";
  size_t e = s.find('\n', b);
  return s.substr(b, e == std::string::npos ? std::string::npos : e - b);
}

std::string format_for_print(const std::vector<c10::IValue>& values) {
  std::ostringstream os;
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) os << ' ';
    if (values[i].isString()) os << values[i].toStringRef();
    else os << values[i];
  }
  return os.str();
}

std::vector<c10::IValue> Interpreter::exec(const Node* node, Env& env, const InterpreterHooks& hooks) {
  std::vector<c10::IValue> outs;
  const auto kind = node->kind();
  if (kind == c10::prim::Constant) {
    auto v = torch::jit::toIValue(node->output());
    outs.push_back(v ? *v : c10::IValue());
  } else if (kind == c10::prim::If) {
    bool cond = lookup(env, node->input(0)).toBool();
    outs = run_block(node->blocks()[cond ? 0 : 1], env, hooks);
  } else if (kind == c10::prim::Loop) {
    int64_t max_trip = lookup(env, node->input(0)).toInt();
    bool cond = lookup(env, node->input(1)).toBool();
    std::vector<c10::IValue> carried;
    for (size_t i = 2; i < node->inputs().size(); ++i) carried.push_back(lookup(env, node->input(i)));
    const Block* body = node->blocks()[0];
    for (int64_t it = 0; it < max_trip && cond; ++it) {
      env[body->inputs()[0]] = c10::IValue(it);
      for (size_t i = 0; i < carried.size(); ++i) env[body->inputs()[i + 1]] = carried[i];
      auto res = run_block(body, env, hooks);
      cond = res.at(0).toBool();
      carried.assign(res.begin() + 1, res.end());
    }
    outs = std::move(carried);
  } else if (kind == c10::prim::Print) {
    std::vector<c10::IValue> in;
    for (const auto* v : node->inputs()) in.push_back(lookup(env, v));
    std::ostream& os = hooks.print_sink ? *hooks.print_sink : std::cout;
    os << format_for_print(in) << '\n';
  } else if (kind == c10::prim::ListUnpack) {
    auto list = lookup(env, node->input(0)).toList();
    if (list.size() != node->outputs().size())
      throw Error("prim::ListUnpack: expected " + std::to_string(node->outputs().size()) + " elements, got " +
                  std::to_string(list.size()));
    for (size_t i = 0; i < list.size(); ++i) outs.push_back(list.get(i));
  } else if (kind == c10::prim::TupleUnpack) {
    auto tup = lookup(env, node->input(0)).toTuple();
    for (const auto& e : tup->elements()) outs.push_back(e);
  } else if (kind == c10::prim::TupleConstruct) {
    std::vector<c10::IValue> elems;
    for (const auto* v : node->inputs()) elems.push_back(lookup(env, v));
    outs.push_back(c10::ivalue::Tuple::create(std::move(elems)));
  } else if (kind == c10::prim::ListConstruct) {
    auto lt = node->output()->type()->expect<c10::ListType>();
    c10::impl::GenericList list(lt->getElementType());
    list.reserve(node->inputs().size());
    for (const auto* v : node->inputs()) list.push_back(lookup(env, v));
    outs.push_back(std::move(list));
  } else if (kind == c10::prim::unchecked_cast) {
    outs.push_back(lookup(env, node->input(0)));
  } else if (kind == c10::prim::Uninitialized) {
    outs.push_back(c10::IValue());
  } else if (kind == c10::prim::GetAttr) {
    auto obj = lookup(env, node->input(0)).toObject();
    outs.push_back(obj->getAttr(node->s(c10::attr::name)));
  } else {
    torch::jit::Stack stack;
    stack.reserve(node->inputs().size());
    for (const auto* v : node->inputs()) stack.push_back(lookup(env, v));
    // Vararg operators (aten::format, prim::min of many, ...) read their argument count from the
    // top of the stack, as TorchScript's own interpreter pushes it (its OPN instruction).
    if (vararg(node)) stack.emplace_back(static_cast<int64_t>(node->inputs().size()));
    operation(node)(stack);
    if (stack.size() != node->outputs().size())
      throw Error(std::string("interpreter: ") + node->kind().toQualString() + " returned " +
                  std::to_string(stack.size()) + " values, expected " + std::to_string(node->outputs().size()));
    outs.assign(std::make_move_iterator(stack.begin()), std::make_move_iterator(stack.end()));
  }
  return outs;
}

const c10::IValue& lookup(Interpreter::Env& env, const Value* v) {
  auto it = env.find(v);
  if (it != env.end()) return it->second;
  if (v->node()->kind() == c10::prim::Constant) {
    auto iv = torch::jit::toIValue(v);
    return env.emplace(v, iv ? *iv : c10::IValue()).first->second;
  }
  throw Error("interpreter: value %" + v->debugName() + " used before it was computed");
}

std::vector<c10::IValue> Interpreter::exec_node(const Node* node, Env& env, const InterpreterHooks& hooks) {
  try {
    return exec(node, env, hooks);
  } catch (const Error& e) {
    if (!failed_node_) failed_node_ = node;
    const std::string what = e.what();
    if (what.rfind("interpreter: value", 0) == 0)
      throw Error(std::string(node->kind().toQualString()) + ": " + what.substr(13));
    throw;
  } catch (const c10::Error& e) {
    if (!failed_node_) failed_node_ = node;
    throw Error(std::string(node->kind().toQualString()) + " failed: " + first_line(e.what_without_backtrace()));
  } catch (const std::exception& e) {
    if (!failed_node_) failed_node_ = node;
    throw Error(std::string(node->kind().toQualString()) + " failed: " + first_line(e.what()));
  }
}

std::vector<c10::IValue> Interpreter::run_block(const Block* block, Env& env, const InterpreterHooks& hooks) {
  for (const Node* node : block->nodes()) {
    std::vector<c10::IValue> outs = exec_node(node, env, hooks);
    for (size_t i = 0; i < node->outputs().size() && i < outs.size(); ++i) env[node->output(i)] = outs[i];
    if (hooks.after_node) hooks.after_node(node, outs);
  }
  std::vector<c10::IValue> rets;
  for (const auto* v : block->outputs()) rets.push_back(lookup(env, v));
  return rets;
}

std::vector<c10::IValue> Interpreter::run(const std::vector<c10::IValue>& inputs, const InterpreterHooks& hooks) {
  const auto& gin = graph_->inputs();
  if (inputs.size() != gin.size())
    throw Error("forward takes " + std::to_string(gin.size() - 1) + " inputs, " +
                std::to_string(inputs.size() - 1) + " given");
  Env env;
  failed_node_ = nullptr;
  for (size_t i = 0; i < gin.size(); ++i) env[gin[i]] = inputs[i];
  torch::NoGradGuard no_grad;
  return run_block(graph_->block(), env, hooks);
}

}  // namespace kiln::capture
