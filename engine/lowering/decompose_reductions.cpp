// The decomposition table, reductions: sum/mean/amax/amin over dims, softmax and log_softmax as
// max + sum, layer_norm as mean + variance (two passes over the row), adaptive_avg_pool2d to 1x1,
// max_pool2d as a max over each window (or, with LowerOptions::pool_windows, as a pointwise computation taking
// the max of its window's taps, written out).
#include <algorithm>
#include <cmath>

#include "engine/lowering/lowering_context.h"

namespace kiln::lowering {

using capture::sym_const;
using capture::sym_is_const;

namespace {

struct ReduceShape {
  std::vector<Sym> out;                // kept dims
  std::vector<Sym> reduced;            // reduced dims, in order
  std::vector<IExpr> input_index;      // input index in terms of out vars then reduce vars
  std::vector<bool> is_reduced;
};

ReduceShape reduce_shape(const std::vector<Sym>& in, std::vector<int64_t> dims) {
  ReduceShape r;
  r.is_reduced.assign(in.size(), false);
  for (auto d : dims) r.is_reduced[d] = true;
  int kept = 0;
  for (size_t i = 0; i < in.size(); ++i)
    if (!r.is_reduced[i]) {
      r.out.push_back(in[i]);
      ++kept;
    }
  int out_v = 0, red_v = kept;
  for (size_t i = 0; i < in.size(); ++i) {
    if (r.is_reduced[i]) {
      r.reduced.push_back(in[i]);
      r.input_index.push_back(ie_var(red_v++));
    } else {
      r.input_index.push_back(ie_var(out_v++));
    }
  }
  return r;
}

// Index of a keepdim-free reduction result from a full-rank index (vars 0..rank-1).
std::vector<IExpr> row_index(const std::vector<bool>& is_reduced) {
  std::vector<IExpr> idx;
  for (size_t i = 0; i < is_reduced.size(); ++i)
    if (!is_reduced[i]) idx.push_back(ie_var(static_cast<int>(i)));
  return idx;
}

std::vector<int64_t> dims_arg(LoweringContext& cx, size_t i, size_t rank) {
  std::vector<int64_t> dims;
  Val v = cx.arg(i);
  if (v.kind == Val::Kind::None || (v.kind == Val::Kind::IntList && v.ints.empty())) {
    for (size_t d = 0; d < rank; ++d) dims.push_back(static_cast<int64_t>(d));
    return dims;
  }
  for (const auto& s : cx.int_list(i)) {
    if (!sym_is_const(s)) throw LoweringError("reduction over a symbolic dim list");
    dims.push_back(cx.dim_arg(s->value, rank));
  }
  std::sort(dims.begin(), dims.end());
  dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
  return dims;
}

// Wraps a keepdim-free result as a view with the reduced dims kept as size 1.
int keepdim_view(LoweringContext& cx, int red, const std::vector<Sym>& in, const std::vector<bool>& is_reduced) {
  std::vector<Sym> out;
  std::vector<IExpr> idx;
  for (size_t i = 0; i < in.size(); ++i) {
    if (is_reduced[i]) out.push_back(sym_const(1));
    else {
      out.push_back(in[i]);
      idx.push_back(ie_var(static_cast<int>(i)));
    }
  }
  return cx.pointwise(out, ve_load(red, idx), /*is_view=*/true);
}

}  // namespace

bool lower_reduction_op(LoweringContext& cx, const std::string& t) {
  const ir::Node& n = *cx.node;
  if (t == "aten::sum" || t == "aten::mean" || t == "aten::amax" || t == "aten::amin") {
    int x = cx.tensor(0);
    auto in = cx.comp(x).sizes;
    auto dims = n.args.size() > 1 ? dims_arg(cx, 1, in.size()) : dims_arg(cx, 99, in.size());
    bool keepdim = n.args.size() > 2 && cx.arg(2).kind == Val::Kind::Bool && cx.arg(2).b;
    if ((t == "aten::sum" || t == "aten::mean") && n.args.size() > 3 && !cx.is_none(3))
      throw LoweringError(t + " with a dtype argument");
    auto r = reduce_shape(in, dims);
    std::string op = t == "aten::amax" ? "max" : t == "aten::amin" ? "min" : "sum";
    int red = cx.reduction(r.out, r.reduced, op, ve_load(x, r.input_index), t == "aten::mean");
    cx.set_output(tensor_val(keepdim ? keepdim_view(cx, red, in, r.is_reduced) : red));
    return true;
  }
  if (t == "aten::max_pool2d") {
    // max over each window. Padded positions count as -inf; their loads read a clamped, in-bounds
    // index (max(0, min(i, H - 1))) whose value the condition discards, so no load ever leaves the input,
    // even when common subexpressions are hoisted out of the condition.
    int x = cx.tensor(0);
    auto in = cx.comp(x).sizes;
    if (in.size() != 4) throw LoweringError("max_pool2d on a tensor other than 4-d");
    auto pair = [&](size_t i, int64_t fallback, const char* what) {
      std::vector<int64_t> v;
      if (n.args.size() > i && !cx.is_none(i))
        for (const auto& s : cx.int_list(i)) {
          if (!sym_is_const(s)) throw LoweringError(std::string("max_pool2d with a symbolic ") + what);
          v.push_back(s->value);
        }
      if (v.empty()) v = {fallback, fallback};
      if (v.size() == 1) v.push_back(v[0]);
      if (v.size() != 2) throw LoweringError(std::string("max_pool2d with a ") + what + " of " + std::to_string(v.size()));
      return v;
    };
    auto kernel = pair(1, 0, "kernel size");
    auto stride = pair(2, 0, "stride");
    if (n.args.size() <= 2 || cx.is_none(2) || cx.int_list(2).empty()) stride = kernel;
    auto pad = pair(3, 0, "padding");
    auto dil = pair(4, 1, "dilation");
    if (n.args.size() > 5 && cx.arg(5).kind == Val::Kind::Bool && cx.arg(5).b)
      throw LoweringError("max_pool2d with ceil_mode");
    std::vector<Sym> out = {in[0], in[1]};
    for (int d = 0; d < 2; ++d) {
      if (!sym_is_const(in[2 + d])) throw LoweringError("max_pool2d over a symbolic size");
      const int64_t size = in[2 + d]->value;
      // Bounded so that the size arithmetic below cannot overflow (a graph read from a file may say anything).
      constexpr int64_t kMost = int64_t{1} << 20;
      if (kernel[d] > kMost || stride[d] > kMost || dil[d] > kMost || pad[d] > kMost || size > (int64_t{1} << 40) ||
          kernel[d] < 1 || stride[d] < 1 || dil[d] < 1 || pad[d] < 0 || 2 * pad[d] > kernel[d] || pad[d] >= size)
        throw LoweringError("max_pool2d with kernel/stride/padding PyTorch would refuse");
      const int64_t o = (size + 2 * pad[d] - dil[d] * (kernel[d] - 1) - 1) / stride[d] + 1;
      if (o < 1) throw LoweringError("max_pool2d with an empty output");
      out.push_back(sym_const(o));
    }
    if (cx.pool_windows && window_written_out(kernel[0], kernel[1])) {
      // The window's taps written out (LowerOptions::pool_windows): one pointwise computation, the max of its
      // taps in the reduction's order (kiln_max(-inf, t) is t, NaN included, so the results are the same bits).
      // A padded tap reads its index clamped into the input and counts -inf; only the taps that can cross an
      // edge carry the condition.
      VExpr best;
      for (int64_t kh = 0; kh < kernel[0]; ++kh)
        for (int64_t kw = 0; kw < kernel[1]; ++kw) {
          const WindowPosition at = window_position({kh, kw}, {stride[0], stride[1]}, {pad[0], pad[1]}, {dil[0], dil[1]}, out, in);
          VExpr v = ve_load(x, at.index);
          if (at.inside) v = ve_where(at.inside, v, ve_const(-INFINITY));
          best = best ? ve_binary("max", best, v) : v;
        }
      cx.set_output(tensor_val(cx.pointwise(out, best)));
      return true;
    }
    // vars: 0..3 the output (n, c, oh, ow), 4 and 5 the window (kh, kw).
    std::vector<IExpr> idx = {ie_var(0), ie_var(1)};
    VExpr inside;
    for (int d = 0; d < 2; ++d) {
      const int64_t size = in[2 + d]->value;
      IExpr at = ie_add(ie_add(ie_mul(ie_var(2 + d), ie_const(stride[d])), ie_const(-pad[d])),
                        ie_mul(ie_var(4 + d), ie_const(dil[d])));
      if (pad[d] == 0) {
        idx.push_back(at);
        continue;
      }
      // Clamped on both sides, as any padded window may cross both.
      WindowTap t = window_tap(at, -1, size, size);
      idx.push_back(t.index);
      inside = inside ? ve_binary("and", inside, t.inside) : t.inside;
    }
    VExpr body = ve_load(x, idx);
    if (inside) body = ve_where(inside, body, ve_const(-INFINITY));
    int red = cx.reduction(out, {sym_const(kernel[0]), sym_const(kernel[1])}, "max", body);
    cx.set_output(tensor_val(red));
    return true;
  }
  if (t == "aten::adaptive_avg_pool2d") {
    int x = cx.tensor(0);
    auto in = cx.comp(x).sizes;
    auto os = cx.int_list(1);
    if (in.size() != 4 || os.size() != 2 || !sym_is_const(os[0]) || !sym_is_const(os[1]) || os[0]->value != 1 ||
        os[1]->value != 1)
      throw LoweringError("adaptive_avg_pool2d to a size other than 1x1");
    auto r = reduce_shape(in, {2, 3});
    int red = cx.reduction(r.out, r.reduced, "sum", ve_load(x, r.input_index), /*mean=*/true);
    cx.set_output(tensor_val(keepdim_view(cx, red, in, r.is_reduced)));
    return true;
  }
  if (t == "aten::softmax" || t == "aten::log_softmax" || t == "aten::_softmax" || t == "aten::_log_softmax") {
    int x = cx.tensor(0);
    auto in = cx.comp(x).sizes;
    int64_t d = cx.dim_arg(cx.int_const(1), in.size());
    if (t[6] != '_' && n.args.size() > 2 && !cx.is_none(2)) throw LoweringError(t + " with a dtype argument");
    auto r = reduce_shape(in, {d});
    VExpr xr = ve_load(x, r.input_index);
    int amax = cx.reduction(r.out, r.reduced, "max", xr);
    // exp(x - max) summed over the row; the max is read at the row's (out) index.
    std::vector<IExpr> out_vars;
    for (size_t i = 0; i < r.out.size(); ++i) out_vars.push_back(ie_var(static_cast<int>(i)));
    VExpr shifted_r = ve_binary("sub", xr, ve_load(amax, out_vars));
    int sum = cx.reduction(r.out, r.reduced, "sum", ve_unary("exp", shifted_r));
    auto ri = row_index(r.is_reduced);
    VExpr shifted = ve_binary("sub", cx.load_all(x), ve_load(amax, ri));
    VExpr body = t.find("log_") != std::string::npos
                     ? ve_binary("sub", shifted, ve_unary("log", ve_load(sum, ri)))
                     : ve_binary("div", ve_unary("exp", shifted), ve_load(sum, ri));
    cx.set_output(tensor_val(cx.pointwise(in, body)));
    return true;
  }
  if (t == "aten::layer_norm") {
    int x = cx.tensor(0);
    auto in = cx.comp(x).sizes;
    auto norm = cx.int_list(1);
    if (norm.size() > in.size()) throw LoweringError("layer_norm shape longer than the input's");
    std::vector<int64_t> dims;
    for (size_t i = in.size() - norm.size(); i < in.size(); ++i) dims.push_back(static_cast<int64_t>(i));
    double eps = cx.number(4);
    auto r = reduce_shape(in, dims);
    std::vector<IExpr> out_vars;
    for (size_t i = 0; i < r.out.size(); ++i) out_vars.push_back(ie_var(static_cast<int>(i)));
    VExpr xr = ve_load(x, r.input_index);
    int mean = cx.reduction(r.out, r.reduced, "sum", xr, /*mean=*/true);
    VExpr centered_r = ve_binary("sub", xr, ve_load(mean, out_vars));
    int var = cx.reduction(r.out, r.reduced, "sum", ve_binary("mul", centered_r, centered_r), /*mean=*/true);
    auto ri = row_index(r.is_reduced);
    VExpr body = ve_binary("mul", ve_binary("sub", cx.load_all(x), ve_load(mean, ri)),
                           ve_unary("rsqrt", ve_binary("add", ve_load(var, ri), ve_const(eps))));
    // weight and bias index the normalized (trailing) dims.
    std::vector<IExpr> trailing;
    for (size_t i = in.size() - norm.size(); i < in.size(); ++i) trailing.push_back(ie_var(static_cast<int>(i)));
    if (!cx.is_none(2)) body = ve_binary("mul", body, ve_load(cx.tensor(2), trailing));
    if (!cx.is_none(3)) body = ve_binary("add", body, ve_load(cx.tensor(3), trailing));
    cx.set_output(tensor_val(cx.pointwise(in, body)));
    return true;
  }
  return false;
}

}  // namespace kiln::lowering
