// The decomposition table, views: pure index arithmetic over their input (no data moves).
#include "engine/lowering/lowering_context.h"

namespace kiln::lowering {

using capture::sym_binary;
using capture::sym_const;
using capture::sym_is_const;
using Op = capture::SymNode::Op;

namespace {

// Output index (vars 0..rank-1 over `out`) → input index for a reshape from `in` to `out`.
std::vector<IExpr> reshape_index(const std::vector<Sym>& in, const std::vector<Sym>& out) {
  IExpr lin = ie_const(0);
  for (size_t k = 0; k < out.size(); ++k) lin = ie_add(lin, ie_mul(ie_var(static_cast<int>(k)), ie_size(numel(out, k + 1))));
  std::vector<IExpr> idx;
  for (size_t j = 0; j < in.size(); ++j) {
    IExpr e = ie_floordiv(lin, ie_size(numel(in, j + 1)));
    if (j > 0) e = ie_mod(e, ie_size(in[j]));
    idx.push_back(e);
  }
  return idx;
}

// Fills in a -1 entry of a view/reshape shape.
std::vector<Sym> resolve_shape(const LoweringContext& cx, const std::vector<Sym>& in, std::vector<Sym> shape) {
  int infer = -1;
  Sym known = sym_const(1);
  for (size_t i = 0; i < shape.size(); ++i) {
    if (sym_is_const(shape[i]) && shape[i]->value == -1) infer = static_cast<int>(i);
    else known = sym_mul(known, shape[i]);
  }
  if (infer >= 0) shape[infer] = sym_binary(Op::FloorDiv, numel(in), known);
  return shape;
}

// A view has its source's dtype, also where no tensor output of the node names it (the pieces of split, chunk
// and unbind come out as a list: a piece read whole by an extern is stored in that dtype).
int view_of(LoweringContext& cx, const std::vector<Sym>& sizes, int src, std::vector<IExpr> idx) {
  const int c = cx.pointwise(sizes, ve_load(src, std::move(idx)), /*is_view=*/true);
  cx.prog().comps[static_cast<size_t>(c)].dtype = cx.comp(src).dtype;
  return c;
}

int slice_of(LoweringContext& cx, int x, int64_t dim, const Sym& start, const Sym& len, int64_t step) {
  auto sizes = cx.comp(x).sizes;
  std::vector<IExpr> idx;
  for (size_t k = 0; k < sizes.size(); ++k) {
    IExpr v = ie_var(static_cast<int>(k));
    if (static_cast<int64_t>(k) == dim) v = ie_add(ie_size(start), ie_mul(v, ie_const(step)));
    idx.push_back(v);
  }
  sizes[dim] = len;
  return view_of(cx, sizes, x, std::move(idx));
}

}  // namespace

bool lower_view_op(LoweringContext& cx, const std::string& t) {
  const ir::Node& n = *cx.node;
  if (t == "aten::contiguous" || t == "aten::clone" || t == "aten::detach" || t == "aten::dropout" ||
      t == "aten::feature_dropout" || t == "aten::alpha_dropout") {
    if ((t == "aten::dropout" || t == "aten::feature_dropout") && cx.arg(2).kind == Val::Kind::Bool && cx.arg(2).b)
      throw LoweringError(t + " in training mode has no lowering");
    int x = cx.tensor(0);
    cx.set_output(tensor_val(view_of(cx, cx.comp(x).sizes, x, cx.load_all(x)->index)));
    return true;
  }
  if (t == "aten::view" || t == "aten::reshape") {
    int x = cx.tensor(0);
    auto in = cx.comp(x).sizes;
    auto out = resolve_shape(cx, in, cx.int_list(1));
    cx.set_output(tensor_val(view_of(cx, out, x, reshape_index(in, out))));
    return true;
  }
  if (t == "aten::flatten") {
    int x = cx.tensor(0);
    auto in = cx.comp(x).sizes;
    if (in.empty()) {
      cx.set_output(tensor_val(view_of(cx, {sym_const(1)}, x, {})));
      return true;
    }
    int64_t s = cx.dim_arg(cx.int_const(1), in.size()), e = cx.dim_arg(cx.int_const(2), in.size());
    std::vector<Sym> out(in.begin(), in.begin() + s);
    out.push_back(numel(in, s, e + 1));
    out.insert(out.end(), in.begin() + e + 1, in.end());
    cx.set_output(tensor_val(view_of(cx, out, x, reshape_index(in, out))));
    return true;
  }
  if (t == "aten::transpose" || t == "aten::t" || t == "aten::permute") {
    int x = cx.tensor(0);
    auto in = cx.comp(x).sizes;
    std::vector<int64_t> perm(in.size());
    for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(i);
    if (t == "aten::t") {
      if (in.size() == 2) std::swap(perm[0], perm[1]);
    } else if (t == "aten::transpose") {
      std::swap(perm[cx.dim_arg(cx.int_const(1), in.size())], perm[cx.dim_arg(cx.int_const(2), in.size())]);
    } else {
      auto p = cx.int_list(1);
      for (size_t i = 0; i < p.size(); ++i) {
        if (!sym_is_const(p[i])) throw LoweringError("permute with symbolic dims");
        perm[i] = cx.dim_arg(p[i]->value, in.size());
      }
    }
    std::vector<Sym> out(in.size());
    std::vector<IExpr> idx(in.size());
    for (size_t i = 0; i < in.size(); ++i) {
      out[i] = in[perm[i]];
      idx[perm[i]] = ie_var(static_cast<int>(i));
    }
    cx.set_output(tensor_val(view_of(cx, out, x, std::move(idx))));
    return true;
  }
  if (t == "aten::expand" || t == "aten::expand_as") {
    int x = cx.tensor(0);
    auto in = cx.comp(x).sizes;
    std::vector<Sym> out = t == "aten::expand" ? cx.int_list(1) : cx.comp(cx.tensor(1)).sizes;
    size_t off = out.size() - in.size();
    for (size_t i = 0; i < out.size(); ++i)
      if (sym_is_const(out[i]) && out[i]->value == -1) out[i] = in[i - off];
    cx.set_output(tensor_val(view_of(cx, out, x, cx.load_broadcast(x, out)->index)));
    return true;
  }
  if (t == "aten::unsqueeze") {
    int x = cx.tensor(0);
    auto in = cx.comp(x).sizes;
    int64_t d = cx.int_const(1);
    if (d < 0) d += static_cast<int64_t>(in.size()) + 1;
    std::vector<Sym> out = in;
    out.insert(out.begin() + d, sym_const(1));
    std::vector<IExpr> idx;
    for (size_t k = 0; k < out.size(); ++k)
      if (static_cast<int64_t>(k) != d) idx.push_back(ie_var(static_cast<int>(k)));
    cx.set_output(tensor_val(view_of(cx, out, x, std::move(idx))));
    return true;
  }
  if (t == "aten::squeeze") {
    int x = cx.tensor(0);
    auto in = cx.comp(x).sizes;
    std::vector<bool> drop(in.size(), false);
    auto is_one = [](const Sym& s) { return sym_is_const(s) && s->value == 1; };
    if (n.args.size() > 1) {
      int64_t d = cx.dim_arg(cx.int_const(1), in.size());
      drop[d] = is_one(in[d]);
    } else {
      for (size_t i = 0; i < in.size(); ++i) drop[i] = is_one(in[i]);
    }
    std::vector<Sym> out;
    std::vector<IExpr> idx;
    int v = 0;
    for (size_t i = 0; i < in.size(); ++i) {
      if (drop[i]) {
        idx.push_back(ie_const(0));
      } else {
        out.push_back(in[i]);
        idx.push_back(ie_var(v++));
      }
    }
    cx.set_output(tensor_val(view_of(cx, out, x, std::move(idx))));
    return true;
  }
  if (t == "aten::slice") {
    int x = cx.tensor(0);
    auto in = cx.comp(x).sizes;
    int64_t d = cx.dim_arg(cx.int_const(1), in.size());
    int64_t step = n.args.size() > 4 ? cx.int_const(4) : 1;
    if (!sym_is_const(in[d])) throw LoweringError("slice of a symbolic dim");
    int64_t size = in[d]->value;
    int64_t start = cx.is_none(2) ? 0 : cx.int_const(2), end = cx.is_none(3) ? size : cx.int_const(3);
    if (start < 0) start += size;
    if (end < 0) end += size;
    start = std::clamp<int64_t>(start, 0, size);
    end = std::clamp<int64_t>(end, start, size);
    cx.set_output(tensor_val(slice_of(cx, x, d, sym_const(start), sym_const((end - start + step - 1) / step), step)));
    return true;
  }
  if (t == "aten::select") {
    int x = cx.tensor(0);
    auto in = cx.comp(x).sizes;
    int64_t d = cx.dim_arg(cx.int_const(1), in.size());
    int64_t i = cx.int_const(2);
    if (i < 0) {
      if (!sym_is_const(in[d])) throw LoweringError("negative select on a symbolic dim");
      i += in[d]->value;
    }
    std::vector<Sym> out;
    std::vector<IExpr> idx;
    int v = 0;
    for (size_t k = 0; k < in.size(); ++k) {
      if (static_cast<int64_t>(k) == d) {
        idx.push_back(ie_const(i));
      } else {
        out.push_back(in[k]);
        idx.push_back(ie_var(v++));
      }
    }
    cx.set_output(tensor_val(view_of(cx, out, x, std::move(idx))));
    return true;
  }
  if ((t == "aten::split" || t == "aten::split_with_sizes") && cx.arg(1).kind == Val::Kind::IntList) {
    // split(x, [a, b, ...], dim): consecutive slices of the given sizes.
    int x = cx.tensor(0);
    auto in = cx.comp(x).sizes;
    int64_t d = cx.dim_arg(cx.int_const(2), in.size());
    Val list;
    list.kind = Val::Kind::TensorList;
    Sym start = sym_const(0);
    for (const auto& len : cx.arg(1).ints) {
      list.tensors.push_back(slice_of(cx, x, d, start, len, 1));
      start = sym_binary(Op::Add, start, len);
    }
    if (capture::sym_str(start) != capture::sym_str(in[d]))
      throw LoweringError(t + ": sizes add up to " + capture::sym_str(start) + ", not " + capture::sym_str(in[d]));
    cx.set_output(list);
    return true;
  }
  if (t == "aten::chunk" || t == "aten::split" || t == "aten::unbind") {
    int x = cx.tensor(0);
    auto in = cx.comp(x).sizes;
    int64_t d = cx.dim_arg(t == "aten::unbind" ? cx.int_const(1) : cx.int_const(2), in.size());
    if (!sym_is_const(in[d])) throw LoweringError(t + " along a symbolic dim");
    int64_t size = in[d]->value;
    int64_t piece = t == "aten::chunk" ? (size + cx.int_const(1) - 1) / cx.int_const(1) : t == "aten::split" ? cx.int_const(1) : 1;
    Val list;
    list.kind = Val::Kind::TensorList;
    int64_t start = 0;
    for (int64_t len : split_lengths(size, piece)) {
      int c = slice_of(cx, x, d, sym_const(start), sym_const(len), 1);
      start += len;
      if (t == "aten::unbind") {
        auto s = cx.comp(c).sizes;
        std::vector<Sym> out;
        std::vector<IExpr> idx;
        int v = 0;
        for (size_t k = 0; k < s.size(); ++k) {
          if (static_cast<int64_t>(k) == d) idx.push_back(ie_const(0));
          else {
            out.push_back(s[k]);
            idx.push_back(ie_var(v++));
          }
        }
        c = view_of(cx, out, c, idx);
      }
      list.tensors.push_back(c);
    }
    cx.set_output(list);
    return true;
  }
  if (t == "prim::TupleUnpack" && n.args.size() == 1 && n.args[0].kind == ir::Arg::Kind::Ref) {
    // A tuple made in this region ((output, weights) of nn.MultiheadAttention, the weights an
    // undefined tensor): each element is the value that went in.
    const ir::Node* made = nullptr;
    for (const auto& m : cx.graph.nodes)
      if (m.target == "prim::TupleConstruct" && !m.outputs.empty() && m.outputs[0].name == n.args[0].ref) made = &m;
    if (made && made->args.size() == n.outputs.size()) {
      for (size_t i = 0; i < n.outputs.size(); ++i) cx.vals[n.outputs[i].name] = cx.value(made->args[i]);
      return true;
    }
  }
  if (t == "prim::ListUnpack") {
    Val in = cx.arg(0);
    if (in.kind != Val::Kind::TensorList || in.tensors.size() != n.outputs.size())
      throw LoweringError("prim::ListUnpack of an unsupported list");
    for (size_t i = 0; i < n.outputs.size(); ++i) cx.vals[n.outputs[i].name] = tensor_val(in.tensors[i]);
    return true;
  }
  if (t == "aten::__getitem__" && cx.arg(0).kind == Val::Kind::TensorList) {
    const auto list = cx.arg(0).tensors;
    cx.set_output(tensor_val(list[cx.list_index(1, list.size())]));
    return true;
  }
  if (t == "prim::ListConstruct" || t == "prim::TupleConstruct") {
    cx.set_output(cx.value(ir::Arg::list(n.args)));
    return true;
  }
  if (t == "aten::cat") {
    Val list = cx.arg(0);
    if (list.kind != Val::Kind::TensorList) throw LoweringError("aten::cat of a non-tensor list");
    // As in eager, a 1-d empty operand (torch.tensor([]): an empty cache) is skipped whatever the rank.
    std::vector<int> kept;
    for (int c : list.tensors) {
      const auto& sz = cx.comp(c).sizes;
      if (!(sz.size() == 1 && capture::sym_is_const(sz[0]) && sz[0]->value == 0)) kept.push_back(c);
    }
    if (kept.empty()) throw LoweringError("aten::cat of empty tensors only");
    list.tensors = kept;
    auto first = cx.comp(list.tensors[0]).sizes;
    int64_t d = cx.dim_arg(cx.int_const(1), first.size());
    std::vector<Sym> out = first;
    Sym total = sym_const(0);
    std::vector<Sym> starts;
    for (int c : list.tensors) {
      starts.push_back(total);
      total = sym_binary(Op::Add, total, cx.comp(c).sizes[d]);
    }
    out[d] = total;
    // where(i_d < end_0, a[..], where(i_d < end_1, b[.. i_d - start_1 ..], ...))
    VExpr body;
    for (size_t k = list.tensors.size(); k-- > 0;) {
      std::vector<IExpr> idx;
      for (size_t j = 0; j < out.size(); ++j) {
        IExpr v = ie_var(static_cast<int>(j));
        if (static_cast<int64_t>(j) == d) v = ie_add(v, ie_mul(ie_const(-1), ie_size(starts[k])));
        idx.push_back(v);
      }
      VExpr load = ve_load(list.tensors[k], idx);
      if (!body) {
        body = load;
      } else {
        Sym end = sym_binary(Op::Add, starts[k], cx.comp(list.tensors[k]).sizes[d]);
        // The index as a value: compare i_d against the end of piece k.
        body = ve_where(ve_index_less(ie_var(static_cast<int>(d)), ie_size(end)), load, body);
      }
    }
    cx.set_output(tensor_val(cx.pointwise(out, body)));
    return true;
  }
  return false;
}

}  // namespace kiln::lowering
