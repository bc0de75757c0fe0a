// Symbolic integers for dynamic shapes: expressions over size symbols (s0, s1, ...) built while
// a region is captured, printed in guards ("s0 > 4") and evaluated when guards are checked.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

namespace kiln::capture {

struct SymNode;
using Sym = std::shared_ptr<const SymNode>;

struct SymNode {
  enum class Op { Const, Var, Add, Sub, Mul, FloorDiv, Mod, Gt, Ge, Lt, Le, Eq, Ne, Not };
  Op op = Op::Const;
  int64_t value = 0;  // Const
  std::string name;   // Var
  Sym a, b;
};

Sym sym_const(int64_t v);
Sym sym_var(const std::string& name);
Sym sym_binary(SymNode::Op op, Sym a, Sym b);  // folds constants
Sym sym_not(Sym a);

bool sym_is_const(const Sym& s);
std::string sym_str(const Sym& s);  // "s0 > 4", "(s0 * 16) // 2"
// Evaluates with symbol bindings; nullopt when a symbol is unbound or on division by zero.
std::optional<int64_t> sym_eval(const Sym& s, const std::map<std::string, int64_t>& bindings);

}  // namespace kiln::capture
