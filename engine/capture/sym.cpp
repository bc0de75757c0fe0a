#include "engine/capture/sym.h"

namespace kiln::capture {

using Op = SymNode::Op;

Sym sym_const(int64_t v) {
  auto n = std::make_shared<SymNode>();
  n->op = Op::Const;
  n->value = v;
  return n;
}

Sym sym_var(const std::string& name) {
  auto n = std::make_shared<SymNode>();
  n->op = Op::Var;
  n->name = name;
  return n;
}

bool sym_is_const(const Sym& s) { return s && s->op == Op::Const; }

Sym sym_binary(Op op, Sym a, Sym b) {
  auto n = std::make_shared<SymNode>();
  n->op = op;
  n->a = std::move(a);
  n->b = std::move(b);
  if (sym_is_const(n->a) && sym_is_const(n->b)) {
    if (auto v = sym_eval(n, {})) return sym_const(*v);
  }
  return n;
}

Sym sym_not(Sym a) {
  auto n = std::make_shared<SymNode>();
  n->op = Op::Not;
  n->a = std::move(a);
  if (sym_is_const(n->a)) return sym_const(n->a->value ? 0 : 1);
  return n;
}

static const char* op_text(Op op) {
  switch (op) {
    case Op::Add: return " + ";
    case Op::Sub: return " - ";
    case Op::Mul: return " * ";
    case Op::FloorDiv: return " // ";
    case Op::Mod: return " % ";
    case Op::Gt: return " > ";
    case Op::Ge: return " >= ";
    case Op::Lt: return " < ";
    case Op::Le: return " <= ";
    case Op::Eq: return " == ";
    case Op::Ne: return " != ";
    default: return " ? ";
  }
}

static bool is_leaf(const Sym& s) { return s->op == Op::Const || s->op == Op::Var; }

std::string sym_str(const Sym& s) {
  if (!s) return "?";
  switch (s->op) {
    case Op::Const: return std::to_string(s->value);
    case Op::Var: return s->name;
    case Op::Not: return "not (" + sym_str(s->a) + ")";
    default: {
      std::string a = is_leaf(s->a) ? sym_str(s->a) : "(" + sym_str(s->a) + ")";
      std::string b = is_leaf(s->b) ? sym_str(s->b) : "(" + sym_str(s->b) + ")";
      return a + op_text(s->op) + b;
    }
  }
}

std::optional<int64_t> sym_eval(const Sym& s, const std::map<std::string, int64_t>& bindings) {
  if (!s) return std::nullopt;
  if (s->op == Op::Const) return s->value;
  if (s->op == Op::Var) {
    auto it = bindings.find(s->name);
    if (it == bindings.end()) return std::nullopt;
    return it->second;
  }
  auto a = sym_eval(s->a, bindings);
  if (!a) return std::nullopt;
  if (s->op == Op::Not) return *a ? 0 : 1;
  auto b = sym_eval(s->b, bindings);
  if (!b) return std::nullopt;
  switch (s->op) {
    case Op::Add: return *a + *b;
    case Op::Sub: return *a - *b;
    case Op::Mul: return *a * *b;
    case Op::FloorDiv: {
      if (*b == 0) return std::nullopt;
      int64_t q = *a / *b;
      if ((*a % *b != 0) && ((*a < 0) != (*b < 0))) --q;
      return q;
    }
    case Op::Mod: {
      if (*b == 0) return std::nullopt;
      int64_t r = *a % *b;
      if (r != 0 && ((r < 0) != (*b < 0))) r += *b;
      return r;
    }
    case Op::Gt: return *a > *b;
    case Op::Ge: return *a >= *b;
    case Op::Lt: return *a < *b;
    case Op::Le: return *a <= *b;
    case Op::Eq: return *a == *b;
    case Op::Ne: return *a != *b;
    default: return std::nullopt;
  }
}

}  // namespace kiln::capture
