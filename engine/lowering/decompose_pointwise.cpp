// The decomposition table, pointwise: activations, arithmetic with broadcasting and scalars,
// comparisons, where/masked_fill/clamp, and inference batch_norm.
#include <cmath>
#include <set>

#include "engine/lowering/lowering_context.h"
#include "engine/lowering/wrong_lowering.h"

namespace kiln::lowering {

namespace {

const std::set<std::string>& unary_fns() {
  static const std::set<std::string> fns = {"relu", "sigmoid", "tanh", "exp", "log", "sqrt", "rsqrt", "sin",
                                            "cos",  "abs",     "neg",  "erf", "log1p", "expm1", "reciprocal"};
  return fns;
}

// The output sizes of an elementwise op over its tensor operands.
std::vector<Sym> out_sizes(LoweringContext& cx, const std::vector<Val>& vals) {
  std::vector<Sym> s;
  bool first = true;
  for (const auto& v : vals) {
    if (v.kind != Val::Kind::Tensor) continue;
    s = first ? cx.comp(v.comp).sizes : cx.broadcast(s, cx.comp(v.comp).sizes);
    first = false;
  }
  if (first) throw LoweringError(cx.node->target + " has no tensor operand");
  return s;
}

VExpr gelu(VExpr x, bool tanh_approx) {
  if (tanh_approx) {
    // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    VExpr x3 = ve_binary("mul", ve_binary("mul", x, x), x);
    VExpr inner = ve_binary("mul", ve_const(std::sqrt(2.0 / M_PI)), ve_binary("add", x, ve_binary("mul", ve_const(0.044715), x3)));
    return ve_binary("mul", ve_binary("mul", ve_const(0.5), x), ve_binary("add", ve_const(1.0), ve_unary("tanh", inner)));
  }
  // 0.5 x (1 + erf(x / sqrt(2)))
  return ve_binary("mul", ve_binary("mul", ve_const(0.5), x),
                   ve_binary("add", ve_const(1.0), ve_unary("erf", ve_binary("mul", x, ve_const(M_SQRT1_2)))));
}

}  // namespace

bool lower_pointwise_op(LoweringContext& cx, const std::string& t) {
  const ir::Node& n = *cx.node;
  std::string fn = t.substr(t.find("::") + 2);
  if (!fn.empty() && fn.back() == '_') fn.pop_back();  // in-place variants behave the same on fresh values
  if (unary_fns().count(fn) && n.args.size() >= 1) {
    int x = cx.tensor(0);
    std::string f = wrong_lowering_of(fn);  // fn itself outside the checker's tests
    VExpr v = cx.load_all(x);
    cx.set_output(tensor_val(cx.pointwise(cx.comp(x).sizes, f == "identity" ? v : ve_unary(f, v))));
    return true;
  }
  if (fn == "hardsigmoid" || fn == "hardswish" || fn == "relu6") {
    // hardsigmoid(x) = min(max(x + 3, 0), 6) / 6; hardswish(x) = x * hardsigmoid(x); relu6 = min(max(x, 0), 6)
    int x = cx.tensor(0);
    VExpr v = cx.load_all(x);
    VExpr body;
    if (fn == "relu6") {
      body = ve_binary("min", ve_binary("max", v, ve_const(0.0)), ve_const(6.0));
    } else {
      VExpr hs = ve_binary("div", ve_binary("min", ve_binary("max", ve_binary("add", v, ve_const(3.0)), ve_const(0.0)), ve_const(6.0)),
                           ve_const(6.0));
      body = fn == "hardswish" ? ve_binary("mul", v, hs) : hs;
    }
    cx.set_output(tensor_val(cx.pointwise(cx.comp(x).sizes, body)));
    return true;
  }
  if (t == "aten::to" || t == "aten::type_as" || t == "aten::_to_copy") {
    // A dtype conversion: the load, stored in the result's dtype (set from the node's output).
    Val x = cx.arg(0);
    if (x.kind != Val::Kind::Tensor) return false;
    // An explicit conversion to a 16-bit float rounds even where fusion keeps the value in a
    // register (ordinary float16 arithmetic stays float32 inside a kernel, as in Inductor).
    VExpr body = cx.load_all(x.comp);
    const auto to = n.outputs.empty() ? ir::DType::Unknown : n.outputs[0].meta.dtype;
    if (to == ir::DType::Float16 && cx.comp(x.comp).dtype != ir::DType::Float16) body = ve_unary("to_float16", body);
    if (to == ir::DType::BFloat16 && cx.comp(x.comp).dtype != ir::DType::BFloat16) body = ve_unary("to_bfloat16", body);
    cx.set_output(tensor_val(cx.pointwise(cx.comp(x.comp).sizes, body)));
    return true;
  }
  if (t == "aten::arange") {
    // arange(end, ...), arange(start, end, ...), arange(start, end, step, ...): start + i * step.
    if (n.outputs.empty() || n.outputs[0].meta.shape.size() != 1) return false;
    size_t numeric = 0;
    while (numeric < n.args.size() && numeric < 3) {
      Val v = cx.arg(numeric);
      if (v.kind != Val::Kind::Int && v.kind != Val::Kind::Float) break;
      ++numeric;
    }
    if (numeric == 0) return false;
    double start = numeric >= 2 ? cx.number(0) : 0.0;
    double step = numeric == 3 ? cx.number(2) : 1.0;
    const auto& d = n.outputs[0].meta.shape[0];
    std::vector<Sym> sizes{d.is_symbolic() ? capture::sym_var(d.symbol) : capture::sym_const(d.value)};
    VExpr body = ve_index_value(ie_var(0));
    if (step != 1.0) body = ve_binary("mul", body, ve_const(step));
    if (start != 0.0) body = ve_binary("add", body, ve_const(start));
    cx.set_output(tensor_val(cx.pointwise(sizes, body)));
    return true;
  }
  if (fn == "silu") {
    int x = cx.tensor(0);
    VExpr v = cx.load_all(x);
    cx.set_output(tensor_val(cx.pointwise(cx.comp(x).sizes, ve_binary("mul", v, ve_unary("sigmoid", v)))));
    return true;
  }
  if (fn == "gelu") {
    int x = cx.tensor(0);
    Val approx = cx.arg(1);
    bool tanh_approx = approx.kind == Val::Kind::Str && approx.s == "tanh";
    if (approx.kind == Val::Kind::Str && approx.s != "tanh" && approx.s != "none")
      throw LoweringError("gelu approximation '" + approx.s + "'");
    cx.set_output(tensor_val(cx.pointwise(cx.comp(x).sizes, gelu(cx.load_all(x), tanh_approx))));
    return true;
  }
  static const std::set<std::string> binary = {"add", "sub", "mul", "div", "maximum", "minimum", "gt", "lt",
                                               "ge",  "le",  "eq",  "ne",  "pow",     "rsub"};
  if (binary.count(fn) && n.args.size() >= 2) {
    Val a = cx.arg(0), b = cx.arg(1);
    if (a.kind != Val::Kind::Tensor && b.kind != Val::Kind::Tensor) return false;
    if (fn == "div" && n.args.size() > 2 && cx.arg(2).kind != Val::Kind::None)
      throw LoweringError("div with a rounding mode");
    auto sizes = out_sizes(cx, {a, b});
    VExpr x = cx.operand(a, sizes), y = cx.operand(b, sizes);
    if ((fn == "add" || fn == "sub" || fn == "rsub") && n.args.size() > 2) {
      double alpha = cx.number(2);
      if (alpha != 1.0) y = ve_binary("mul", y, ve_const(alpha));
    }
    VExpr body;
    if (fn == "rsub") body = ve_binary("sub", y, x);
    else if (fn == "maximum") body = ve_binary("max", x, y);
    else if (fn == "minimum") body = ve_binary("min", x, y);
    else body = ve_binary(wrong_lowering_of(fn), x, y);  // fn itself outside the checker's tests
    cx.set_output(tensor_val(cx.pointwise(sizes, body)));
    return true;
  }
  if (fn == "clamp" || fn == "clamp_min" || fn == "clamp_max" || fn == "hardtanh") {
    int x = cx.tensor(0);
    VExpr v = cx.load_all(x);
    auto sizes = cx.comp(x).sizes;
    bool has_lo = fn != "clamp_max" && !cx.is_none(1);
    size_t hi_arg = fn == "clamp_max" ? 1 : 2;
    bool has_hi = fn != "clamp_min" && n.args.size() > hi_arg && !cx.is_none(hi_arg);
    if (has_lo) v = ve_binary("max", v, cx.operand(cx.arg(1), sizes));
    if (has_hi) v = ve_binary("min", v, cx.operand(cx.arg(hi_arg), sizes));
    cx.set_output(tensor_val(cx.pointwise(sizes, v)));
    return true;
  }
  if (fn == "where" && n.args.size() == 3) {
    Val c = cx.arg(0), a = cx.arg(1), b = cx.arg(2);
    auto sizes = out_sizes(cx, {c, a, b});
    cx.set_output(tensor_val(cx.pointwise(sizes, ve_where(cx.operand(c, sizes), cx.operand(a, sizes), cx.operand(b, sizes)))));
    return true;
  }
  if (fn == "masked_fill") {
    Val x = cx.arg(0), mask = cx.arg(1), value = cx.arg(2);
    auto sizes = out_sizes(cx, {x, mask});
    cx.set_output(tensor_val(cx.pointwise(sizes, ve_where(cx.operand(mask, sizes), cx.operand(value, sizes), cx.operand(x, sizes)))));
    return true;
  }
  if (fn == "batch_norm") {
    // Inference: (x - mean[c]) * rsqrt(var[c] + eps) * weight[c] + bias[c], channels on dim 1 (one
    // reciprocal square root per element, as LibTorch's CUDA kernel computes invstd, rather than a
    // square root and a division: on the GPU those made a batch-norm + SiLU kernel compute-bound).
    if (cx.arg(5).kind == Val::Kind::Bool && cx.arg(5).b) throw LoweringError("batch_norm in training mode");
    int x = cx.tensor(0);
    auto sizes = cx.comp(x).sizes;
    if (sizes.size() < 2) throw LoweringError("batch_norm on a tensor of rank < 2");
    double eps = cx.number(7);
    auto per_channel = [&](size_t arg) { return ve_load(cx.tensor(arg), {ie_var(1)}); };
    VExpr v = ve_binary("mul", ve_binary("sub", cx.load_all(x), per_channel(3)),
                        ve_unary("rsqrt", ve_binary("add", per_channel(4), ve_const(eps))));
    if (!cx.is_none(1)) v = ve_binary("mul", v, per_channel(1));
    if (!cx.is_none(2)) v = ve_binary("add", v, per_channel(2));
    cx.set_output(tensor_val(cx.pointwise(sizes, v)));
    return true;
  }
  return false;
}

}  // namespace kiln::lowering
