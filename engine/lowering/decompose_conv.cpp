// Depthwise convolutions as generated arithmetic (lower_graph.h, LowerOptions::depthwise).
#include <algorithm>
#include <array>
#include <memory>
#include <optional>

#include "engine/lowering/lowering_context.h"

namespace kiln::lowering {

using capture::sym_const;
using capture::sym_is_const;

namespace {

// The literal pair of an int-list argument (one value stands for both dims); nothing when it is not one.
std::optional<std::array<int64_t, 2>> literal_pair(const LoweringContext& cx, size_t i) {
  Val v = cx.arg(i);
  if (v.kind != Val::Kind::IntList || v.ints.empty() || v.ints.size() > 2) return std::nullopt;
  std::array<int64_t, 2> out{};
  for (size_t d = 0; d < 2; ++d) {
    const Sym& s = v.ints[v.ints.size() == 1 ? 0 : d];
    if (!sym_is_const(s)) return std::nullopt;
    out[d] = s->value;
  }
  return out;
}

}  // namespace

WindowTap window_tap(const IExpr& at, int64_t lowest, int64_t highest, int64_t size) {
  if (lowest >= 0 && highest < size) return {at, nullptr};
  IExpr clamped = highest >= size ? ie_min(at, ie_const(size - 1)) : at;  // both sides: ie_clamp's form
  if (lowest < 0) clamped = ie_max(clamped, ie_const(0));
  return {clamped, ve_binary("and", ve_index_less(ie_const(-1), at), ve_index_less(at, ie_const(size)))};
}

WindowPosition window_position(const std::array<int64_t, 2>& tap, const std::array<int64_t, 2>& stride,
                               const std::array<int64_t, 2>& pad, const std::array<int64_t, 2>& dil,
                               const std::vector<Sym>& out, const std::vector<Sym>& in) {
  WindowPosition p;
  p.index = {ie_var(0), ie_var(1)};
  for (int d = 0; d < 2; ++d) {
    const int64_t lowest = tap[d] * dil[d] - pad[d];
    IExpr at = ie_add(ie_mul(ie_var(2 + d), ie_const(stride[d])), ie_const(lowest));
    WindowTap t = window_tap(at, lowest, (out[2 + d]->value - 1) * stride[d] + lowest, in[2 + d]->value);
    p.index.push_back(t.index);
    if (t.inside) p.inside = p.inside ? ve_binary("and", p.inside, t.inside) : t.inside;
  }
  return p;
}

bool lower_depthwise_conv(LoweringContext& cx) {
  const ir::Node& n = *cx.node;
  // conv2d(input, weight, bias, stride, padding, dilation, groups) and
  // _convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups, ...).
  const bool conv2d = n.target == "aten::conv2d";
  if (!conv2d && n.target != "aten::_convolution") return false;
  if (conv2d ? n.args.size() != 7 : n.args.size() < 9) return false;
  if (n.outputs.size() != 1 || !n.outputs[0].meta.is_tensor()) return false;
  const ir::DType dt = n.outputs[0].meta.dtype;
  if (dt != ir::DType::Float32 && dt != ir::DType::Float16 && dt != ir::DType::BFloat16) return false;
  const Val xv = cx.arg(0), wv = cx.arg(1), bv = cx.arg(2);
  if (xv.kind != Val::Kind::Tensor || wv.kind != Val::Kind::Tensor) return false;
  const Comp &x = cx.comp(xv.comp), &w = cx.comp(wv.comp);
  if (x.dtype != dt || w.dtype != dt || x.sizes.size() != 4 || w.sizes.size() != 4) return false;
  for (size_t d = 1; d < 4; ++d)
    if (!sym_is_const(x.sizes[d]) || !sym_is_const(w.sizes[d])) return false;
  if (!sym_is_const(w.sizes[0])) return false;
  const int64_t channels = x.sizes[1]->value;
  // One filter per channel: weight [C, 1, KH, KW], groups == C (no channel multiplier).
  if (channels < 2 || w.sizes[0]->value != channels || w.sizes[1]->value != 1) return false;
  Val groups = cx.arg(conv2d ? 6 : 8);
  if (groups.kind != Val::Kind::Int || !sym_is_const(groups.i) || groups.i->value != channels) return false;
  if (!conv2d) {  // not transposed, no output padding
    Val transposed = cx.arg(6);
    if (transposed.kind != Val::Kind::Bool || transposed.b) return false;
    auto out_pad = literal_pair(cx, 7);
    if (!out_pad || (*out_pad)[0] != 0 || (*out_pad)[1] != 0) return false;
  }
  bool bias = false;
  if (bv.kind == Val::Kind::Tensor) {
    const Comp& b = cx.comp(bv.comp);
    if (b.dtype != dt || b.sizes.size() != 1 || !sym_is_const(b.sizes[0]) || b.sizes[0]->value != channels) return false;
    bias = true;
  } else if (!cx.is_none(2)) {
    return false;
  }
  auto stride = literal_pair(cx, 3), pad = literal_pair(cx, 4), dil = literal_pair(cx, 5);
  if (!stride || !pad || !dil) return false;  // "same"/"valid" padding strings, symbolic values
  const int64_t kernel[2] = {w.sizes[2]->value, w.sizes[3]->value};
  // Large windows stay cuDNN's: each output element would load every tap itself.
  if (!window_written_out(kernel[0], kernel[1])) return false;
  std::vector<Sym> out = {x.sizes[0], x.sizes[1]};
  for (int d = 0; d < 2; ++d) {
    const int64_t size = x.sizes[2 + d]->value;
    // Bounded so that the arithmetic below cannot overflow (a graph read from a file may say anything).
    constexpr int64_t kMost = int64_t{1} << 20;
    if ((*stride)[d] < 1 || (*dil)[d] < 1 || (*pad)[d] < 0 || (*stride)[d] > kMost || (*dil)[d] > kMost ||
        (*pad)[d] > kMost || size > (int64_t{1} << 30))
      return false;
    const int64_t o = (size + 2 * (*pad)[d] - (*dil)[d] * (kernel[d] - 1) - 1) / (*stride)[d] + 1;
    if (o < 1) return false;
    out.push_back(sym_const(o));
  }
  // The node's own sizes must agree (a graph read from a file is not trusted to).
  const auto& meta = n.outputs[0].meta.shape;
  if (meta.size() != 4) return false;
  for (size_t d = 1; d < 4; ++d)
    if (meta[d].is_symbolic() || meta[d].value != out[d]->value) return false;

  // out[n, c, oh, ow] = bias[c] + sum over (kh, kw) of x[n, c, oh*s - p + kh*d, ow*s - p + kw*d] * w[c, 0, kh, kw];
  // taps in the padding add nothing. A padded tap's load reads its index clamped into the input, a value the
  // condition discards (as max_pool2d's), so no load leaves the input and every load may run unconditionally.
  VExpr sum = bias ? ve_load(bv.comp, {ie_var(1)}) : VExpr();
  for (int64_t kh = 0; kh < kernel[0]; ++kh)
    for (int64_t kw = 0; kw < kernel[1]; ++kw) {
      const WindowPosition at = window_position({kh, kw}, *stride, *pad, *dil, out, x.sizes);
      VExpr term = ve_binary("mul", ve_load(xv.comp, at.index), ve_load(wv.comp, {ie_var(1), ie_const(0), ie_const(kh), ie_const(kw)}));
      if (at.inside) term = ve_where(at.inside, term, ve_const(0));
      sum = sum ? ve_binary("add", sum, term) : term;
    }
  cx.set_output(tensor_val(cx.pointwise(out, sum)));
  return true;
}

}  // namespace kiln::lowering
