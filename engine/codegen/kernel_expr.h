// Expressions inside generated kernels: sizes, index arithmetic, row-major offsets and value
// expressions of the loop IR, spelled for C++ or CUDA. Shared by the C++ and CUDA emitters.
#pragma once

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <functional>
#include <set>
#include <sstream>
#include <map>
#include <string>
#include <vector>

#include "engine/codegen/emitted.h"
#include "engine/fusion/schedule.h"
#include "engine/lowering/index_simplify.h"

namespace kiln::codegen {

using lowering::Comp;
using lowering::IExpr;
using lowering::IExprNode;
using lowering::Sym;
using lowering::VExpr;
using lowering::VExprNode;

struct KernelExpr {
  enum class Dialect { Cpp, Cuda };
  const fusion::FusedProgram& p;
  std::map<std::string, int> sym_index;
  Dialect dialect = Dialect::Cpp;

  // 32-bit index arithmetic (CUDA): the kernels declare their indices as kiln_i, and sizes and
  // index constants are written without the LL suffix, so flat indices, divisions and offsets run
  // on 32-bit integers. Only where every extent is known and small (index_fits_32).
  bool narrow = false;

  KernelExpr(const fusion::FusedProgram& program, Dialect d) : p(program), dialect(d) {
    for (size_t i = 0; i < p.program.symbols.size(); ++i) sym_index[p.program.symbols[i]] = static_cast<int>(i);
  }

  // An integer constant of index arithmetic: 64-bit unless narrow.
  std::string lit(int64_t v) const { return std::to_string(v) + (narrow ? "" : "LL"); }
  std::string floordiv_fn() const { return narrow ? "kiln_floordiv_i" : "kiln_floordiv"; }
  std::string mod_fn() const { return narrow ? "kiln_mod_i" : "kiln_mod"; }

  // Whether every index a program's kernels compute fits 32-bit integers: no symbolic size, and
  // every computation's elements (a reduction's rows times its reduced extent) at most 2^26. The
  // headroom covers what the loop headers compute on the way: a grid stride past the end, and a
  // warp-per-row kernel's thread number (32 per row: at most 2^31 in unsigned arithmetic).
  static bool index_fits_32(const fusion::FusedProgram& program) {
    if (!program.program.symbols.empty()) return false;
    constexpr int64_t kLimit = int64_t{1} << 26;
    for (const auto& c : program.program.comps) {
      int64_t n = 1;
      for (const auto* dims : {&c.sizes, &c.reduce_sizes})
        for (const auto& s : *dims) {
          if (!capture::sym_is_const(s) || s->value < 0) return false;
          n *= std::max<int64_t>(s->value, 1);
          if (n > kLimit) return false;
        }
    }
    return true;
  }

  std::string size(const Sym& s) {
    using Op = capture::SymNode::Op;
    switch (s->op) {
      case Op::Const: return lit(s->value);
      case Op::Var: {
        auto it = sym_index.find(s->name);
        return it == sym_index.end() ? lit(0) + " /* unknown symbol */" : "sym[" + std::to_string(it->second) + "]";
      }
      case Op::Add: return "(" + size(s->a) + " + " + size(s->b) + ")";
      case Op::Sub: return "(" + size(s->a) + " - " + size(s->b) + ")";
      case Op::Mul: return "(" + size(s->a) + " * " + size(s->b) + ")";
      case Op::FloorDiv: return floordiv_fn() + "(" + size(s->a) + ", " + size(s->b) + ")";
      case Op::Mod: return mod_fn() + "(" + size(s->a) + ", " + size(s->b) + ")";
      default: return lit(0);
    }
  }

  // Loop variables the kernel being emitted has declared, by name, and their extents: a variable
  // named here runs over [0, extent). Cleared at each kernel; set where a loop or an unflattened
  // index declares one. Index expressions are simplified with them (lowering/index_simplify.h), and a
  // division whose dividend cannot be negative is spelled as the plain / or %.
  std::map<std::string, int64_t> extent_of;
  void set_extent(const std::string& var, const Sym& extent) {
    if (capture::sym_is_const(extent) && extent->value > 0) extent_of[var] = extent->value;
    else extent_of.erase(var);
  }

  // The extents of the named loop variables (-1: not known).
  std::vector<int64_t> extents(const std::vector<std::string>& vars) const {
    std::vector<int64_t> ext(vars.size(), -1);
    for (size_t k = 0; k < vars.size(); ++k) {
      auto it = extent_of.find(vars[k]);
      if (it != extent_of.end()) ext[k] = it->second;
    }
    return ext;
  }

  std::string index(const IExpr& e, const std::vector<std::string>& vars) {
    const std::vector<int64_t> ext = extents(vars);
    return index_text(lowering::ie_simplify(e, ext), vars, ext);
  }

  // Whether load e stays inside its computation at every point of the loops (each index's range
  // within the constant size of its dim): such a load may run whether or not a condition wants it.
  bool in_bounds(const VExpr& e, const std::vector<std::string>& vars) const {
    const Comp& c = p.program.comps[e->comp];
    const std::vector<int64_t> ext = extents(vars);
    for (size_t d = 0; d < e->index.size() && d < c.sizes.size(); ++d) {
      if (!capture::sym_is_const(c.sizes[d])) return false;
      const auto r = lowering::ie_range(lowering::ie_simplify(e->index[d], ext), ext);
      if (r.lo < 0 || r.hi >= c.sizes[d]->value) return false;
    }
    return e->index.size() == c.sizes.size();
  }

  std::string index_text(const IExpr& e, const std::vector<std::string>& vars, const std::vector<int64_t>& ext) {
    const bool plain = (e->op == IExprNode::Op::FloorDiv || e->op == IExprNode::Op::Mod) &&
                       e->b->op == IExprNode::Op::Const && e->b->value > 0 && lowering::ie_range(e->a, ext).lo >= 0;
    switch (e->op) {
      case IExprNode::Op::Const: return std::to_string(e->value);
      case IExprNode::Op::Var: return e->var < static_cast<int>(vars.size()) ? vars[e->var] : "0";
      case IExprNode::Op::Size: return size(e->size);
      case IExprNode::Op::Add: return "(" + index_text(e->a, vars, ext) + " + " + index_text(e->b, vars, ext) + ")";
      case IExprNode::Op::Mul: return index_text(e->a, vars, ext) + " * " + index_text(e->b, vars, ext);
      case IExprNode::Op::FloorDiv:
        if (plain) return "(" + index_text(e->a, vars, ext) + " / " + index_text(e->b, vars, ext) + ")";
        return floordiv_fn() + "(" + index_text(e->a, vars, ext) + ", " + index_text(e->b, vars, ext) + ")";
      case IExprNode::Op::Mod:
        if (plain) return "(" + index_text(e->a, vars, ext) + " % " + index_text(e->b, vars, ext) + ")";
        return mod_fn() + "(" + index_text(e->a, vars, ext) + ", " + index_text(e->b, vars, ext) + ")";
      case IExprNode::Op::Min:
      case IExprNode::Op::Max: {  // both sides the index type: a compare and a select (IMNMX on the GPU)
        const std::string a = index_text(e->a, vars, ext), b = index_text(e->b, vars, ext);
        return "(" + a + (e->op == IExprNode::Op::Min ? " < " : " > ") + b + " ? " + a + " : " + b + ")";
      }
    }
    return "0";
  }

  // Offset of an index into computation c: row-major, or along c's layout (storage order).
  std::string offset(int c, const std::vector<IExpr>& idx, const std::vector<std::string>& vars) {
    const Comp& comp = p.program.comps[c];
    const auto& sizes = comp.sizes;
    const auto order = lowering::storage_order(comp);
    std::string off;
    for (size_t d = 0; d < idx.size(); ++d) {
      // The stride of dim d: the sizes of the dims stored inside it.
      size_t pos = 0;
      while (pos < order.size() && order[pos] != static_cast<int>(d)) ++pos;
      std::string stride;
      for (size_t j = pos + 1; j < order.size(); ++j) {
        std::string s = size(sizes[order[j]]);
        if (s == lit(1)) continue;
        stride += (stride.empty() ? "" : " * ") + s;
      }
      std::string term = index(idx[d], vars);
      if (term == "0") continue;
      if (!stride.empty()) term = "(" + term + ") * " + stride;
      off += (off.empty() ? "" : " + ") + term;
    }
    return off.empty() ? "0" : off;
  }

  // Text safe inside a /* */ comment within an expression: letters, digits and '_' only.
  static std::string identifier_chars(const std::string& text) {
    std::string out;
    for (unsigned char c : text) out += std::isalnum(c) ? static_cast<char>(c) : '_';
    return out;
  }

  static std::string literal(double v) {
    if (std::isnan(v)) return "NAN";
    if (std::isinf(v)) return v > 0 ? "INFINITY" : "-INFINITY";
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.9g", v);
    std::string s = buf;
    if (s.find_first_of(".eE") == std::string::npos) s += ".0";
    return s + "f";
  }

  // accumulators: reduction computations of the current row kernel → local variable names.
  // Declares a local pointer for every buffer kernel k reads or writes (written ones non-const).
  // ctype: the element type's spelling; buf: the expression holding the pointer array.
  void declare_buffers(std::ostringstream& os, const fusion::FusedKernel& k, const char* (*ctype)(ir::DType),
                       const std::string& buf) {
    std::set<int> used;
    std::function<void(const VExpr&)> walk = [&](const VExpr& e) {
      if (!e) return;
      if (e->op == VExprNode::Op::Load) used.insert(e->comp);
      walk(e->a);
      walk(e->b);
      walk(e->c);
    };
    for (int c : k.comps) {
      walk(p.program.comps[c].body);
      used.insert(c);
    }
    std::set<int> own(k.comps.begin(), k.comps.end());
    for (int c : used) {
      if (!p.realized[c]) continue;
      const Comp& comp = p.program.comps[c];
      const char* konst = own.count(c) ? "" : "const ";
      os << "  " << konst << ctype(comp.dtype) << "* __restrict__ b" << c << " = static_cast<" << konst
         << ctype(comp.dtype) << "*>(" << buf << "[" << c << "]);  // " << cpp_comment(comp.name) << "\n";
    }
  }

  // An emitter may spell some loads itself (the CUDA vector path reads them from registers);
  // an empty result falls back to the plain indexed load.
  std::function<std::string(const VExpr&, const std::vector<std::string>&)> load_hook;

  // Common subexpressions of one statement become locals: inlining a value used twice (x + sin(x))
  // duplicates its tree, and without this the generated code would compute it again each time.
  std::map<std::string, std::string>* cse = nullptr;
  std::vector<std::string>* prelude = nullptr;
  int temps = 0;

  // Starts a statement: subexpressions it shares go into `lines` as locals.
  void begin_statement(std::map<std::string, std::string>& table, std::vector<std::string>& lines) {
    cse = &table;
    prelude = &lines;
  }
  void end_statement() {
    cse = nullptr;
    prelude = nullptr;
  }

  // The value of `body` as one statement's expression; its shared subexpressions are written to
  // os first, one local per line, indented by pad.
  std::string statement(std::ostream& os, const std::string& pad, const VExpr& body,
                        const std::vector<std::string>& vars, const std::map<int, std::string>& accs, size_t outer,
                        const Comp* store = nullptr) {
    std::map<std::string, std::string> table;
    std::vector<std::string> lines;
    begin_statement(table, lines);
    std::string v = store ? store_value(*store, body, vars, accs, outer) : value(body, vars, accs, outer);
    end_statement();
    for (const auto& l : lines) os << pad << l << "\n";
    return v;
  }

  // One element of a pointwise kernel: every computation of `comps` in order, each stored to its
  // buffer at the element the loop variables name.
  void store_each(std::ostream& os, const std::vector<int>& comps, const std::vector<std::string>& vars,
                  const std::string& pad) {
    for (int c : comps) {
      const Comp& comp = p.program.comps[c];
      std::vector<lowering::IExpr> idx;
      for (size_t d = 0; d < comp.sizes.size(); ++d) idx.push_back(lowering::ie_var(static_cast<int>(d)));
      std::string v = statement(os, pad, comp.body, vars, {}, 0, &comp);
      os << pad << "b" << c << "[" << offset(c, idx, vars) << "] = " << v << ";  // " << cpp_comment(comp.name) << "\n";
    }
  }

  std::string share(std::string text) {
    if (!cse || text.size() < 10) return text;
    auto it = cse->find(text);
    if (it != cse->end()) return it->second;
    // Inside a branch of a where: computed only when the branch is taken. Hoisted, it would run
    // for every element, loading where the branch's index is out of bounds (cat's pieces).
    if (lazy_depth > 0) return "(" + text + ")";
    return hoisted(text);
  }

  int lazy_depth = 0;  // > 0 while writing a where's branches

  // Loads that stay in bounds (in_bounds) become locals of the statement even inside a where's
  // branch: a window's taps, read by several outputs of one thread, are loaded once (CUDA window rows).
  bool hoist_loads = false;
  std::string hoisted(const std::string& text) {
    if (!cse) return text;
    auto it = cse->find(text);
    if (it != cse->end()) return it->second;
    std::string name = "t" + std::to_string(temps++);
    prelude->push_back("const auto " + name + " = " + text + ";");
    (*cse)[text] = name;
    return name;
  }

  // Integer context: an expression over integer (and bool) values only is computed in 64-bit
  // integers, exactly as eager does (index arithmetic, masks, position ids), not through float.
  bool int_ctx = false;

  static bool integral(ir::DType t) { return lowering::integral_dtype(t); }
  bool exact_int(const VExpr& e) const { return lowering::ve_exact_int(e, p.program.comps); }
  // e's value in integer arithmetic (e must be exact_int).
  std::string int_value(const VExpr& e, const std::vector<std::string>& vars, const std::map<int, std::string>& accs,
                        size_t outer_rank) {
    const bool saved = int_ctx;
    int_ctx = true;
    std::string v = value(e, vars, accs, outer_rank);
    int_ctx = saved;
    return v;
  }
  // The value to store into computation c: integer outputs of exact bodies in integer arithmetic.
  std::string store_value(const Comp& c, const VExpr& body, const std::vector<std::string>& vars,
                          const std::map<int, std::string>& accs, size_t outer_rank) {
    if (integral(c.dtype) && c.dtype != ir::DType::Bool && exact_int(body)) return int_value(body, vars, accs, outer_rank);
    return value(body, vars, accs, outer_rank);
  }

  std::string value(const VExpr& e, const std::vector<std::string>& vars, const std::map<int, std::string>& accs,
                    size_t outer_rank) {
    std::string text = value_raw(e, vars, accs, outer_rank);
    if (e->op == VExprNode::Op::Unary || e->op == VExprNode::Op::Binary || e->op == VExprNode::Op::Where)
      return share(std::move(text));
    return text;
  }

  std::string value_raw(const VExpr& e, const std::vector<std::string>& vars, const std::map<int, std::string>& accs,
                        size_t outer_rank) {
    switch (e->op) {
      case VExprNode::Op::Const:
        if (int_ctx) return "(" + std::to_string(static_cast<long long>(e->value)) + "LL)";
        return literal(e->value);
      case VExprNode::Op::Scalar: return "static_cast<float>(scalar[" + std::to_string(e->scalar) + "])";
      case VExprNode::Op::Load: {
        auto acc = accs.find(e->comp);
        if (acc != accs.end()) return acc->second;
        if (load_hook) {
          std::string hooked = load_hook(e, vars);
          if (!hooked.empty()) return hooked;
        }
        const Comp& c = p.program.comps[e->comp];
        std::string load = "b" + std::to_string(e->comp) + "[" + offset(e->comp, e->index, vars) + "]";
        if (int_ctx && integral(c.dtype)) load = c.dtype == ir::DType::Bool ? load : "static_cast<long long>(" + load + ")";
        else if (c.dtype != ir::DType::Float32 && c.dtype != ir::DType::Bool) load = "static_cast<float>(" + load + ")";
        return hoist_loads && in_bounds(e, vars) ? hoisted(load) : load;
      }
      case VExprNode::Op::Unary: {
        std::string a = value(e->a, vars, accs, outer_rank);
        const std::string& f = e->fn;
        const bool cuda = dialect == Dialect::Cuda;
        if (f == "relu") return "kiln_relu(" + a + ")";
        if (f == "to_float16") return "static_cast<float>(kiln_half(" + a + "))";
        if (f == "to_bfloat16") return "static_cast<float>(kiln_bf16(" + a + "))";
        // On the GPU the reciprocal is the fast one (2 ulp, as Triton's float division): an IEEE
        // division per element made SiLU kernels compute-bound. 1 / inf is still 0.
        if (f == "sigmoid") return cuda ? "__fdividef(1.0f, 1.0f + expf(-(" + a + ")))" : "(1.0f / (1.0f + std::exp(-(" + a + "))))";
        if (f == "rsqrt") return cuda ? "rsqrtf(" + a + ")" : "(1.0f / std::sqrt(" + a + "))";
        if (f == "neg") return "(-(" + a + "))";
        if (f == "abs") return cuda ? "fabsf(" + a + ")" : "std::fabs(" + a + ")";
        if (f == "reciprocal") return "(1.0f / (" + a + "))";
        if (f == "not") return "(!(" + a + "))";
        return cuda ? f + "f(" + a + ")" : "std::" + f + "(" + a + ")";
      }
      case VExprNode::Op::Binary: {
        if (e->fn == "idx_lt") {
          // Decided by the loops' ranges (a window's tap that no output of this thread puts outside): a constant.
          const std::vector<int64_t> ext = extents(vars);
          const auto a = lowering::ie_range(lowering::ie_simplify(e->index[0], ext), ext);
          const auto b = lowering::ie_range(lowering::ie_simplify(e->index[1], ext), ext);
          if (a.hi < b.lo) return "true";
          if (a.lo >= b.hi) return "false";
          return "(" + index(e->index[0], vars) + " < " + index(e->index[1], vars) + ")";
        }
        if (e->fn == "idx_value") {
          const std::string i = "static_cast<long long>(" + index(e->index[0], vars) + ")";
          return int_ctx ? i : "static_cast<float>(" + i + ")";
        }
        static const std::set<std::string> compare = {"gt", "lt", "ge", "le", "eq", "ne"};
        // Comparisons of integer values compare the integers (no rounding through float).
        const bool int_operands = int_ctx || (compare.count(e->fn) && exact_int(e->a) && exact_int(e->b));
        std::string a = int_operands ? int_value(e->a, vars, accs, outer_rank) : value(e->a, vars, accs, outer_rank);
        std::string b = int_operands ? int_value(e->b, vars, accs, outer_rank) : value(e->b, vars, accs, outer_rank);
        if (int_ctx && (e->fn == "max" || e->fn == "min"))
          return "((" + a + ") " + (e->fn == "max" ? ">" : "<") + " (" + b + ") ? (" + a + ") : (" + b + "))";
        static const std::map<std::string, std::string> ops = {{"add", "+"}, {"sub", "-"}, {"mul", "*"}, {"div", "/"},
                                                               {"gt", ">"},  {"lt", "<"},  {"ge", ">="}, {"le", "<="},
                                                               {"eq", "=="}, {"ne", "!="}, {"and", "&&"}, {"or", "||"}};
        auto it = ops.find(e->fn);
        if (it != ops.end()) return "(" + a + " " + it->second + " " + b + ")";
        if (e->fn == "max") return "kiln_max(" + a + ", " + b + ")";
        if (e->fn == "min") return "kiln_min(" + a + ", " + b + ")";
        if (e->fn == "pow") {
          // Squares and cubes multiply, as LibTorch's pow kernels do (a powf is tens of instructions).
          if (!int_operands && e->b->op == VExprNode::Op::Const && (e->b->value == 2.0 || e->b->value == 3.0))
            return (e->b->value == 2.0 ? "kiln_pow2(" : "kiln_pow3(") + a + ")";
          return (dialect == Dialect::Cuda ? "powf(" : "std::pow(") + a + ", " + b + ")";
        }
        return "/* unknown " + identifier_chars(e->fn) + " */ 0.0f";
      }
      case VExprNode::Op::Where: {
        const std::string c = value(e->c, vars, accs, outer_rank);
        ++lazy_depth;
        const std::string a = value(e->a, vars, accs, outer_rank), b = value(e->b, vars, accs, outer_rank);
        --lazy_depth;
        return "(" + c + " ? " + a + " : " + b + ")";
      }
    }
    return "0.0f";
  }

  std::string size_product(const std::vector<Sym>& sizes) {
    std::string s;
    for (const auto& x : sizes) s += (s.empty() ? "" : " * ") + size(x);
    return s.empty() ? lit(1) : s;
  }
};

}  // namespace kiln::codegen
