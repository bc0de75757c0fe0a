#include "engine/lowering/loop_ir.h"

#include <cmath>
#include <set>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <sstream>

#include "engine/lowering/attention.h"
#include "engine/lowering/index_simplify.h"

namespace kiln::lowering {

using IOp = IExprNode::Op;
using VOp = VExprNode::Op;

static IExpr make_i(IOp op, IExpr a, IExpr b) {
  auto n = std::make_shared<IExprNode>();
  n->op = op;
  n->a = std::move(a);
  n->b = std::move(b);
  return n;
}

IExpr ie_const(int64_t v) {
  auto n = std::make_shared<IExprNode>();
  n->value = v;
  return n;
}
IExpr ie_var(int v) {
  auto n = std::make_shared<IExprNode>();
  n->op = IOp::Var;
  n->var = v;
  return n;
}
IExpr ie_size(const Sym& s) {
  if (capture::sym_is_const(s)) return ie_const(s->value);
  auto n = std::make_shared<IExprNode>();
  n->op = IOp::Size;
  n->size = s;
  return n;
}
static bool is_c(const IExpr& e, int64_t v) { return e->op == IOp::Const && e->value == v; }
IExpr ie_add(IExpr a, IExpr b) {
  if (is_c(a, 0)) return b;
  if (is_c(b, 0)) return a;
  if (a->op == IOp::Const && b->op == IOp::Const) return ie_const(a->value + b->value);
  return make_i(IOp::Add, a, b);
}
IExpr ie_mul(IExpr a, IExpr b) {
  if (is_c(a, 0) || is_c(b, 0)) return ie_const(0);
  if (is_c(a, 1)) return b;
  if (is_c(b, 1)) return a;
  if (a->op == IOp::Const && b->op == IOp::Const) return ie_const(a->value * b->value);
  return make_i(IOp::Mul, a, b);
}
IExpr ie_floordiv(IExpr a, IExpr b) {
  if (is_c(b, 1)) return a;
  if (is_c(a, 0)) return a;
  if (a->op == IOp::Const && b->op == IOp::Const && b->value > 0 && a->value >= 0) return ie_const(a->value / b->value);
  return make_i(IOp::FloorDiv, a, b);
}
IExpr ie_mod(IExpr a, IExpr b) {
  if (is_c(b, 1)) return ie_const(0);
  if (a->op == IOp::Const && b->op == IOp::Const && b->value > 0 && a->value >= 0) return ie_const(a->value % b->value);
  return make_i(IOp::Mod, a, b);
}
IExpr ie_min(IExpr a, IExpr b) {
  if (a->op == IOp::Const && b->op == IOp::Const) return ie_const(std::min(a->value, b->value));
  return make_i(IOp::Min, a, b);
}
IExpr ie_max(IExpr a, IExpr b) {
  if (a->op == IOp::Const && b->op == IOp::Const) return ie_const(std::max(a->value, b->value));
  return make_i(IOp::Max, a, b);
}
IExpr ie_clamp(IExpr a, int64_t lo, int64_t hi) { return ie_max(ie_min(std::move(a), ie_const(hi)), ie_const(lo)); }

std::string ie_str(const IExpr& e) {
  switch (e->op) {
    case IOp::Const: return std::to_string(e->value);
    case IOp::Var: return "i" + std::to_string(e->var);
    case IOp::Size: return capture::sym_str(e->size);
    case IOp::Add: return "(" + ie_str(e->a) + " + " + ie_str(e->b) + ")";
    case IOp::Mul: return ie_str(e->a) + "*" + ie_str(e->b);
    case IOp::FloorDiv: return "(" + ie_str(e->a) + " // " + ie_str(e->b) + ")";
    case IOp::Mod: return "(" + ie_str(e->a) + " % " + ie_str(e->b) + ")";
    case IOp::Min: return "min(" + ie_str(e->a) + ", " + ie_str(e->b) + ")";
    case IOp::Max: return "max(" + ie_str(e->a) + ", " + ie_str(e->b) + ")";
  }
  return "?";
}

VExpr ve_const(double v) {
  auto n = std::make_shared<VExprNode>();
  n->value = v;
  return n;
}
VExpr ve_load(int comp, std::vector<IExpr> index) {
  auto n = std::make_shared<VExprNode>();
  n->op = VOp::Load;
  n->comp = comp;
  n->index = std::move(index);
  return n;
}
VExpr ve_scalar(int k) {
  auto n = std::make_shared<VExprNode>();
  n->op = VOp::Scalar;
  n->scalar = k;
  return n;
}
static bool bool_fn(const std::string& fn) {
  return fn == "idx_lt" || fn == "gt" || fn == "lt" || fn == "ge" || fn == "le" || fn == "eq" || fn == "ne" || fn == "and" ||
         fn == "or" || fn == "not";
}
bool integral_dtype(ir::DType t) {
  return t == ir::DType::Int64 || t == ir::DType::Int32 || t == ir::DType::Int16 || t == ir::DType::Int8 ||
         t == ir::DType::UInt8 || t == ir::DType::Bool;
}

void collect_loads(const VExpr& e, std::set<int>& into) {
  if (!e) return;
  if (e->op == VExprNode::Op::Load) into.insert(e->comp);
  collect_loads(e->a, into);
  collect_loads(e->b, into);
  collect_loads(e->c, into);
}

bool ve_exact_int(const VExpr& e, const std::vector<Comp>& comps) {
  if (!e) return false;
  switch (e->op) {
    case VOp::Const: return std::floor(e->value) == e->value && std::fabs(e->value) < 4.6e18;
    case VOp::Load: return e->comp >= 0 && e->comp < static_cast<int>(comps.size()) && integral_dtype(comps[e->comp].dtype);
    case VOp::Scalar: return false;
    case VOp::Unary: return (e->fn == "neg" || e->fn == "abs" || e->fn == "not") && ve_exact_int(e->a, comps);
    case VOp::Binary: {
      if (ve_is_index_fn(*e)) return true;
      static const std::set<std::string> ok = {"add", "sub", "mul", "max", "min", "gt", "lt", "ge",
                                               "le",  "eq",  "ne",  "and", "or"};
      return ok.count(e->fn) && ve_exact_int(e->a, comps) && ve_exact_int(e->b, comps);
    }
    case VOp::Where: return ve_exact_int(e->a, comps) && ve_exact_int(e->b, comps);
  }
  return false;
}

VExpr ve_index_value(IExpr i) {
  auto n = std::make_shared<VExprNode>();
  n->op = VOp::Binary;
  n->fn = "idx_value";
  n->index = {std::move(i)};
  return n;
}
VExpr ve_index_less(IExpr a, IExpr b) {
  auto n = std::make_shared<VExprNode>(*ve_binary("idx_lt", ve_const(0), ve_const(0)));  // operands unused
  n->index = {std::move(a), std::move(b)};
  return n;
}
bool ve_is_index_fn(const VExprNode& e) {
  return e.op == VOp::Binary && (e.fn == "idx_lt" || e.fn == "idx_value");
}
VExpr ve_unary(const std::string& fn, VExpr a) {
  auto n = std::make_shared<VExprNode>();
  n->op = VOp::Unary;
  n->fn = fn;
  n->a = std::move(a);
  n->is_bool = bool_fn(fn);
  return n;
}
VExpr ve_binary(const std::string& fn, VExpr a, VExpr b) {
  auto n = std::make_shared<VExprNode>();
  n->op = VOp::Binary;
  n->fn = fn;
  n->a = std::move(a);
  n->b = std::move(b);
  n->is_bool = bool_fn(fn);
  return n;
}
VExpr ve_where(VExpr cond, VExpr a, VExpr b) {
  auto n = std::make_shared<VExprNode>();
  n->op = VOp::Where;
  n->c = std::move(cond);
  n->a = std::move(a);
  n->b = std::move(b);
  return n;
}

int ve_size(const VExpr& e) {
  if (!e) return 0;
  return 1 + ve_size(e->a) + ve_size(e->b) + ve_size(e->c);
}

std::string ve_str(const VExpr& e, const std::vector<std::string>& names) {
  switch (e->op) {
    case VOp::Const: {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.9g", e->value);
      return buf;
    }
    case VOp::Load: {
      std::string s = (e->comp >= 0 && e->comp < static_cast<int>(names.size()) ? names[e->comp] : "?") + "[";
      for (size_t i = 0; i < e->index.size(); ++i) s += (i ? ", " : "") + ie_str(e->index[i]);
      return s + "]";
    }
    case VOp::Scalar: return "scalar" + std::to_string(e->scalar);
    case VOp::Unary: return e->fn + "(" + ve_str(e->a, names) + ")";
    case VOp::Binary:
      if (e->fn == "idx_lt") return "(" + ie_str(e->index[0]) + " < " + ie_str(e->index[1]) + ")";
      if (e->fn == "idx_value") return "index(" + ie_str(e->index[0]) + ")";
      return e->fn + "(" + ve_str(e->a, names) + ", " + ve_str(e->b, names) + ")";
    case VOp::Where: return "where(" + ve_str(e->c, names) + ", " + ve_str(e->a, names) + ", " + ve_str(e->b, names) + ")";
  }
  return "?";
}

IExpr ie_subst(const IExpr& e, const std::vector<IExpr>& index) {
  switch (e->op) {
    case IOp::Const:
    case IOp::Size: return e;
    case IOp::Var: return e->var < static_cast<int>(index.size()) ? index[e->var] : e;
    case IOp::Add: return ie_add(ie_subst(e->a, index), ie_subst(e->b, index));
    case IOp::Mul: return ie_mul(ie_subst(e->a, index), ie_subst(e->b, index));
    case IOp::FloorDiv: return ie_floordiv(ie_subst(e->a, index), ie_subst(e->b, index));
    case IOp::Mod: return ie_mod(ie_subst(e->a, index), ie_subst(e->b, index));
    case IOp::Min: return ie_min(ie_subst(e->a, index), ie_subst(e->b, index));
    case IOp::Max: return ie_max(ie_subst(e->a, index), ie_subst(e->b, index));
  }
  return e;
}

namespace {

// e with every index expression in it (loads' indices, index functions') replaced by f of it.
VExpr ve_map_index(const VExpr& e, const std::function<IExpr(const IExpr&)>& f) {
  if (!e) return e;
  switch (e->op) {
    case VOp::Const:
    case VOp::Scalar: return e;
    case VOp::Load: {
      std::vector<IExpr> idx;
      for (const auto& i : e->index) idx.push_back(f(i));
      return ve_load(e->comp, std::move(idx));
    }
    case VOp::Unary: return ve_unary(e->fn, ve_map_index(e->a, f));
    case VOp::Binary: {
      if (ve_is_index_fn(*e)) {  // compares index expressions, or reads one as a value
        auto n = std::make_shared<VExprNode>(*e);
        for (auto& i : n->index) i = f(i);
        return n;
      }
      return ve_binary(e->fn, ve_map_index(e->a, f), ve_map_index(e->b, f));
    }
    case VOp::Where: return ve_where(ve_map_index(e->c, f), ve_map_index(e->a, f), ve_map_index(e->b, f));
  }
  return e;
}

}  // namespace

VExpr ve_subst(const VExpr& e, const std::vector<IExpr>& index) {
  return ve_map_index(e, [&](const IExpr& i) { return ie_subst(i, index); });
}

// index_simplify.h's: the same walk as ve_subst, simplifying instead of substituting.
VExpr ve_simplify(const VExpr& e, const std::vector<int64_t>& ext) {
  return ve_map_index(e, [&](const IExpr& i) { return ie_simplify(i, ext); });
}

const char* comp_kind_name(Comp::Kind k) {
  switch (k) {
    case Comp::Kind::Input: return "input";
    case Comp::Kind::Constant: return "constant";
    case Comp::Kind::Pointwise: return "pointwise";
    case Comp::Kind::Reduction: return "reduction";
    case Comp::Kind::Extern: return "extern";
    case Comp::Kind::Fallback: return "fallback";
  }
  return "?";
}

std::vector<int> storage_order(const Comp& c) {
  if (!c.layout.empty()) return c.layout;
  std::vector<int> order(c.sizes.size());
  for (size_t d = 0; d < order.size(); ++d) order[d] = static_cast<int>(d);
  return order;
}

std::string layout_name(const std::vector<int>& layout) {
  if (layout.empty()) return "";
  if (layout == std::vector<int>{0, 2, 3, 1}) return "channels-last";
  std::string s = "dims(";
  for (size_t i = 0; i < layout.size(); ++i) s += (i ? "," : "") + std::to_string(layout[i]);
  return s + ")";
}

static std::string sizes_str(const std::vector<Sym>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + capture::sym_str(s[i]);
  return out + "]";
}

std::string loop_program_text(const LoopProgram& p) {
  std::vector<std::string> names;
  for (const auto& c : p.comps) names.push_back(c.name);
  std::ostringstream os;
  for (size_t i = 0; i < p.comps.size(); ++i) {
    const Comp& c = p.comps[i];
    os << c.name << " = " << comp_kind_name(c.kind) << (c.is_view ? "(view)" : "") << " " << sizes_str(c.sizes);
    if (!c.layout.empty()) os << " " << layout_name(c.layout);
    switch (c.kind) {
      case Comp::Kind::Input: os << " input " << c.input; break;
      case Comp::Kind::Constant: os << " " << c.attr; break;
      case Comp::Kind::Pointwise: os << " := " << ve_str(c.body, names); break;
      case Comp::Kind::Reduction:
        os << " := " << c.reduce_op << " over " << sizes_str(c.reduce_sizes) << " of " << ve_str(c.body, names);
        if (!c.post_div_sizes.empty()) os << " / " << sizes_str(c.post_div_sizes);
        break;
      case Comp::Kind::Extern:
      case Comp::Kind::Fallback: {
        os << " " << c.target << "(";
        if (c.target == kAttentionTarget) {  // q, k, v, mask: in their order
          for (size_t d = 0; d < c.operands.size(); ++d)
            os << (d ? ", " : "") << (c.operands[d] < 0 ? std::string("None") : names[c.operands[d]]);
        } else {
          for (size_t d = 0; d < c.deps.size(); ++d) os << (d ? ", " : "") << names[c.deps[d]];
        }
        os << ")";
        if (c.drop_bias) os << " without its bias (its readers add it)";
        if (c.target == kAttentionTarget) {
          os << " scale " << c.attn_scale << " heads " << c.attn_heads[0] << "," << c.attn_heads[1] << ","
             << c.attn_heads[2];
          for (size_t i = 0; i < 3; ++i)
            if (c.attn_widths[i] > 0) os << " " << "qkv"[i] << " columns " << c.attn_offsets[i] << "+" << c.attn_widths[i];
          if (c.attn_host_bound) os << " host-bound";
        }
        if (!c.why_fallback.empty()) os << "  # " << c.why_fallback;
        break;
      }
    }
    os << "\n";
  }
  os << "outputs: ";
  for (size_t i = 0; i < p.outputs.size(); ++i) os << (i ? ", " : "") << names[p.outputs[i]];
  os << "\n";
  return os.str();
}

std::vector<std::string> verify(const LoopProgram& p) {
  std::vector<std::string> problems;
  std::function<void(const VExpr&, size_t)> check = [&](const VExpr& e, size_t at) {
    if (!e) return;
    if (e->op == VOp::Load) {
      if (e->comp < 0 || static_cast<size_t>(e->comp) >= at)
        problems.push_back(p.comps[at].name + " loads a computation that is not before it");
      else if (e->index.size() != p.comps[e->comp].sizes.size())
        problems.push_back(p.comps[at].name + " loads " + p.comps[e->comp].name + " with " +
                           std::to_string(e->index.size()) + " indices for " +
                           std::to_string(p.comps[e->comp].sizes.size()) + " dims");
    }
    check(e->a, at);
    check(e->b, at);
    check(e->c, at);
  };
  for (size_t i = 0; i < p.comps.size(); ++i) {
    for (int d : p.comps[i].deps)
      if (d < 0 || static_cast<size_t>(d) >= i) problems.push_back(p.comps[i].name + " depends on a later computation");
    check(p.comps[i].body, i);
    const auto& layout = p.comps[i].layout;
    if (!layout.empty()) {
      std::vector<int> sorted = layout;
      std::sort(sorted.begin(), sorted.end());
      bool perm = sorted.size() == p.comps[i].sizes.size();
      for (size_t d = 0; perm && d < sorted.size(); ++d) perm = sorted[d] == static_cast<int>(d);
      if (!perm) problems.push_back(p.comps[i].name + " has a layout that is not a permutation of its dims");
    }
  }
  for (int o : p.outputs)
    if (o < 0 || static_cast<size_t>(o) >= p.comps.size()) problems.push_back("an output does not exist");
  return problems;
}

}  // namespace kiln::lowering
