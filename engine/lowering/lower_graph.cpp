#include "engine/lowering/lower_graph.h"

#include <cmath>
#include <functional>
#include <set>

#include "engine/lowering/attention.h"
#include "engine/lowering/functionalize.h"
#include "engine/lowering/lowering_context.h"

namespace kiln::lowering {

using capture::sym_binary;
using capture::sym_const;
using capture::sym_is_const;
using capture::sym_var;
using Op = capture::SymNode::Op;

bool same_size(const Sym& a, const Sym& b) { return capture::sym_str(a) == capture::sym_str(b); }

Sym sym_mul(const Sym& a, const Sym& b) {
  if (sym_is_const(a) && a->value == 1) return b;
  if (sym_is_const(b) && b->value == 1) return a;
  return sym_binary(Op::Mul, a, b);
}

Sym numel(const std::vector<Sym>& sizes, size_t from, size_t to) {
  Sym n = sym_const(1);
  for (size_t i = from; i < sizes.size() && i < to; ++i) n = sym_mul(n, sizes[i]);
  return n;
}

Val LoweringContext::value(const ir::Arg& a) const {
  Val v;
  switch (a.kind) {
    case ir::Arg::Kind::Ref: {
      auto it = vals.find(a.ref);
      if (it == vals.end()) throw LoweringError("value %" + a.ref + " is not lowered");
      return it->second;
    }
    case ir::Arg::Kind::None: return v;
    case ir::Arg::Kind::Bool: v.kind = Val::Kind::Bool; v.b = a.b; return v;
    case ir::Arg::Kind::Int: v.kind = Val::Kind::Int; v.i = sym_const(a.i); return v;
    case ir::Arg::Kind::Float: v.kind = Val::Kind::Float; v.f = a.f; return v;
    case ir::Arg::Kind::Str: v.kind = Val::Kind::Str; v.s = a.s; return v;
    case ir::Arg::Kind::List: {
      bool all_int = true, all_tensor = !a.items.empty();
      std::vector<Val> items;
      for (const auto& it : a.items) {
        items.push_back(value(it));
        all_int &= items.back().kind == Val::Kind::Int;
        all_tensor &= items.back().kind == Val::Kind::Tensor;
      }
      if (all_int) {
        v.kind = Val::Kind::IntList;
        for (auto& it : items) v.ints.push_back(it.i);
      } else if (all_tensor) {
        v.kind = Val::Kind::TensorList;
        for (auto& it : items) v.tensors.push_back(it.comp);
      } else {
        v.kind = Val::Kind::Other;
      }
      return v;
    }
    case ir::Arg::Kind::Other: v.kind = Val::Kind::Other; v.s = a.s; return v;
  }
  return v;
}

Val LoweringContext::arg(size_t i) const {
  if (i >= node->args.size()) return Val{};
  return value(node->args[i]);
}

int LoweringContext::tensor(size_t i) const {
  Val v = arg(i);
  if (v.kind != Val::Kind::Tensor) throw LoweringError(node->target + ": argument " + std::to_string(i) + " is not a tensor");
  return v.comp;
}

int64_t LoweringContext::int_const(size_t i) const {
  Val v = arg(i);
  if (v.kind == Val::Kind::Int && sym_is_const(v.i)) return v.i->value;
  if (v.kind == Val::Kind::Bool) return v.b;
  throw LoweringError(node->target + ": argument " + std::to_string(i) + " must be a static int" +
                      (v.unknown.empty() ? "" : " (" + v.unknown + ")"));
}

double LoweringContext::number(size_t i) const {
  Val v = arg(i);
  if (v.kind == Val::Kind::Float) return v.f;
  if (v.kind == Val::Kind::Int && sym_is_const(v.i)) return static_cast<double>(v.i->value);
  if (v.kind == Val::Kind::Bool) return v.b;
  throw LoweringError(node->target + ": argument " + std::to_string(i) + " must be a static number" +
                      (v.unknown.empty() ? "" : " (" + v.unknown + ")"));
}

std::vector<Sym> LoweringContext::int_list(size_t i) const {
  Val v = arg(i);
  if (v.kind == Val::Kind::IntList) return v.ints;
  if (v.kind == Val::Kind::Int) return {v.i};
  throw LoweringError(node->target + ": argument " + std::to_string(i) + " must be a list of ints");
}

bool LoweringContext::is_none(size_t i) const { return arg(i).kind == Val::Kind::None; }

int LoweringContext::add(Comp c) {
  if (c.body) {
    std::set<int> deps;
    collect_loads(c.body, deps);
    c.deps.assign(deps.begin(), deps.end());
  }
  if (node) c.provenance.push_back(node->outputs.empty() ? node->target : node->name());
  if (c.name.empty() && node && !node->outputs.empty()) c.name = node->name();
  out.program.comps.push_back(std::move(c));
  return static_cast<int>(out.program.comps.size()) - 1;
}

int LoweringContext::pointwise(const std::vector<Sym>& sizes, VExpr body, bool is_view, const std::string& target) {
  Comp c;
  c.kind = Comp::Kind::Pointwise;
  c.sizes = sizes;
  c.body = std::move(body);
  c.is_view = is_view;
  c.target = target.empty() && node ? node->target : target;
  c.name = node && !node->outputs.empty() ? node->name() : "";
  // Intermediate computations of one node get suffixed names.
  for (const auto& other : out.program.comps)
    if (other.name == c.name) c.name += "_" + std::to_string(out.program.comps.size());
  return add(std::move(c));
}

int LoweringContext::reduction(const std::vector<Sym>& out_sizes, const std::vector<Sym>& reduce_sizes,
                               const std::string& op, VExpr body, bool mean) {
  Comp c;
  c.kind = Comp::Kind::Reduction;
  c.sizes = out_sizes;
  c.reduce_sizes = reduce_sizes;
  c.reduce_op = op;
  c.body = std::move(body);
  if (mean) c.post_div_sizes = reduce_sizes;
  c.target = node ? node->target : "";
  c.name = (node && !node->outputs.empty() ? node->name() : std::string("red")) + "_" + op;
  for (const auto& other : out.program.comps)
    if (other.name == c.name) c.name += "_" + std::to_string(out.program.comps.size());
  return add(std::move(c));
}

std::vector<Sym> LoweringContext::broadcast(const std::vector<Sym>& a, const std::vector<Sym>& b) const {
  size_t n = std::max(a.size(), b.size());
  std::vector<Sym> out(n);
  for (size_t i = 0; i < n; ++i) {
    const Sym* x = i + a.size() >= n ? &a[i + a.size() - n] : nullptr;
    const Sym* y = i + b.size() >= n ? &b[i + b.size() - n] : nullptr;
    if (!x) out[i] = *y;
    else if (!y) out[i] = *x;
    else if (sym_is_const(*x) && (*x)->value == 1) out[i] = *y;
    else if (sym_is_const(*y) && (*y)->value == 1) out[i] = *x;
    else if (same_size(*x, *y)) out[i] = *x;
    else throw LoweringError(node->target + ": cannot broadcast " + capture::sym_str(*x) + " with " + capture::sym_str(*y));
  }
  return out;
}

VExpr LoweringContext::load_broadcast(int t, const std::vector<Sym>& out_sizes) const {
  const auto& ts = comp(t).sizes;
  std::vector<IExpr> idx;
  size_t offset = out_sizes.size() - ts.size();
  for (size_t j = 0; j < ts.size(); ++j) {
    bool one = sym_is_const(ts[j]) && ts[j]->value == 1;
    bool out_one = sym_is_const(out_sizes[offset + j]) && out_sizes[offset + j]->value == 1;
    idx.push_back(one && !out_one ? ie_const(0) : ie_var(static_cast<int>(offset + j)));
  }
  return ve_load(t, std::move(idx));
}

VExpr LoweringContext::load_all(int t) const {
  std::vector<IExpr> idx;
  for (size_t j = 0; j < comp(t).sizes.size(); ++j) idx.push_back(ie_var(static_cast<int>(j)));
  return ve_load(t, std::move(idx));
}

VExpr LoweringContext::operand(const Val& v, const std::vector<Sym>& out_sizes) const {
  switch (v.kind) {
    case Val::Kind::Tensor: return load_broadcast(v.comp, out_sizes);
    case Val::Kind::Float: return ve_const(v.f);
    case Val::Kind::Bool: return ve_const(v.b ? 1.0 : 0.0);
    case Val::Kind::Int:
      if (sym_is_const(v.i)) return ve_const(static_cast<double>(v.i->value));
      break;
    case Val::Kind::ScalarInput: return ve_scalar(v.scalar);
    default: break;
  }
  throw LoweringError(node->target + ": unsupported operand" + (v.unknown.empty() ? "" : " (" + v.unknown + ")"));
}

std::vector<Sym> LoweringContext::sizes_of(const Val& v) const {
  if (v.kind == Val::Kind::Tensor) return comp(v.comp).sizes;
  return {};
}

size_t LoweringContext::list_index(size_t i, size_t size) const {
  int64_t k = int_const(i);
  if (k < 0) k += static_cast<int64_t>(size);
  if (k < 0 || k >= static_cast<int64_t>(size)) throw LoweringError(node->target + ": index out of range");
  return static_cast<size_t>(k);
}

int64_t LoweringContext::dim_arg(int64_t d, size_t rank) const {
  int64_t r = static_cast<int64_t>(rank);
  if (d < 0) d += r;
  if (d < 0 || (d >= r && !(r == 0 && d == 0))) throw LoweringError(node->target + ": dim out of range");
  return d;
}

void LoweringContext::set_output(const Val& v) {
  if (!node->outputs.empty()) vals[node->outputs[0].name] = v;
}

namespace {

Sym dim_sym(const ir::Dim& d) { return d.is_symbolic() ? sym_var(d.symbol) : sym_const(d.value); }

std::vector<Sym> meta_sizes(const ir::ValueMeta& m) {
  std::vector<Sym> s;
  for (const auto& d : m.shape) s.push_back(dim_sym(d));
  return s;
}

const std::set<std::string>& extern_ops() {
  static const std::set<std::string> ops = {"aten::linear", "aten::addmm", "aten::mm", "aten::matmul", "aten::bmm",
                                            "aten::conv2d", "aten::_convolution", "aten::conv1d", "aten::embedding",
                                            "aten::baddbmm", "aten::einsum"};
  return ops;
}

// Non-tensor nodes: evaluated on the host (symbolically here, exactly at run time).
// A size carried in a 0-d integer tensor (traced code: prim::NumToTensor, then arithmetic on it):
// every tensor-valued operand is such a size, so the node is host arithmetic like its int form.
bool is_size_tensor_op(const LoweringContext& cx) {
  const ir::Node& n = *cx.node;
  if (n.outputs.size() != 1 || !n.outputs[0].meta.is_tensor() || !n.outputs[0].meta.shape.empty()) return false;
  auto dt = n.outputs[0].meta.dtype;
  if (dt != ir::DType::Int64 && dt != ir::DType::Int32) return false;
  if (n.target == "prim::NumToTensor") return true;
  static const std::set<std::string> ops = {"aten::add", "aten::sub", "aten::mul", "aten::floor_divide",
                                            "aten::remainder"};
  if (!ops.count(n.target)) return false;
  bool any_size = false;
  for (const auto& a : n.args) {
    Val v = cx.value(a);
    if (v.kind == Val::Kind::Tensor || v.kind == Val::Kind::TensorList || v.kind == Val::Kind::ScalarInput) return false;
    any_size |= v.kind == Val::Kind::Int && a.kind == ir::Arg::Kind::Ref;
  }
  return any_size;
}

// PyTorch's ScalarType numbering (c10/core/ScalarType.h: stable, saved in TorchScript archives).
int scalar_type_code(ir::DType t) {
  switch (t) {
    case ir::DType::UInt8: return 0;
    case ir::DType::Int8: return 1;
    case ir::DType::Int16: return 2;
    case ir::DType::Int32: return 3;
    case ir::DType::Int64: return 4;
    case ir::DType::Float16: return 5;
    case ir::DType::Float32: return 6;
    case ir::DType::Float64: return 7;
    case ir::DType::Bool: return 11;
    case ir::DType::BFloat16: return 15;
    case ir::DType::Unknown: break;
  }
  return -1;
}

void evaluate_host_op(LoweringContext& cx, bool size_tensor);

bool lower_host_op(LoweringContext& cx) {
  const ir::Node& n = *cx.node;
  bool makes_tensor = false;
  for (const auto& o : n.outputs) makes_tensor |= o.meta.is_tensor() || o.meta.type_name.find("Tensor") != std::string::npos;
  const bool size_tensor = makes_tensor && is_size_tensor_op(cx);
  if (makes_tensor && !size_tensor) return false;
  cx.out.host_ops.push_back(cx.node_index);
  try {
    evaluate_host_op(cx, size_tensor);
    for (const auto& o : n.outputs) {
      if (o.meta.is_tensor()) continue;
      auto it = cx.vals.find(o.name);
      if (it == cx.vals.end()) continue;
      if (it->second.kind == Val::Kind::Int && it->second.i) cx.out.host_values[o.name] = {it->second.i, false};
      if (it->second.kind == Val::Kind::Bool) cx.out.host_values[o.name] = {sym_const(it->second.b ? 1 : 0), true};
    }
  } catch (const LoweringError& e) {
    if (makes_tensor) throw;  // a size tensor that kernels read
    // A host value Kiln cannot evaluate at compile time (a string's length, a value of a branch
    // capture decided): unknown here, computed by the interpreter at run time. A kernel that needs
    // it as a number fails there, naming this op.
    for (const auto& o : n.outputs) {
      Val v;
      v.kind = Val::Kind::Other;
      v.unknown = e.what();
      cx.vals[o.name] = v;
    }
  }
  return true;
}

// The value of a host op at compile time (sizes symbolic); LoweringError when Kiln cannot tell.
void evaluate_host_op(LoweringContext& cx, bool size_tensor) {
  const ir::Node& n = *cx.node;
  const std::string& t = n.target;
  auto int_of = [&](size_t i) -> Sym {
    Val v = cx.arg(i);
    if (v.kind == Val::Kind::Int) return v.i;
    if (v.kind == Val::Kind::Bool) return sym_const(v.b);
    return nullptr;
  };
  if (t == "aten::size" && n.args.size() == 1) {
    Val v;
    v.kind = Val::Kind::IntList;
    v.ints = cx.comp(cx.tensor(0)).sizes;
    cx.set_output(v);
  } else if (t == "aten::size" && n.args.size() == 2) {
    auto& s = cx.comp(cx.tensor(0)).sizes;
    Val v;
    v.kind = Val::Kind::Int;
    v.i = s.at(cx.dim_arg(cx.int_const(1), s.size()));
    cx.set_output(v);
  } else if (t == "aten::dim" || t == "aten::len") {
    // dim(tensor): its rank; len(tensor): its first size; len(list): its length.
    Val in = cx.arg(0);
    Val v;
    v.kind = Val::Kind::Int;
    if (in.kind == Val::Kind::Tensor && t == "aten::dim") v.i = sym_const(static_cast<int64_t>(cx.comp(in.comp).sizes.size()));
    else if (in.kind == Val::Kind::Tensor && !cx.comp(in.comp).sizes.empty()) v.i = cx.comp(in.comp).sizes[0];
    else if (in.kind == Val::Kind::IntList) v.i = sym_const(static_cast<int64_t>(in.ints.size()));
    else if (in.kind == Val::Kind::TensorList) v.i = sym_const(static_cast<int64_t>(in.tensors.size()));
    else throw LoweringError(t + " of a value Kiln does not track (a string or another host value)");
    cx.set_output(v);
  } else if (t == "prim::dtype") {
    // x.dtype: known at compile time from the tensor's metadata, as PyTorch's ScalarType number
    // (the value TorchScript compares and passes on, e.g. to aten::to or a mask's dtype check).
    const int code = scalar_type_code(cx.comp(cx.tensor(0)).dtype);
    if (code < 0) throw LoweringError("prim::dtype of a tensor whose dtype Kiln does not know");
    Val v;
    v.kind = Val::Kind::Int;
    v.i = sym_const(static_cast<int64_t>(code));
    cx.set_output(v);
  } else if ((t == "aten::__is__" || t == "aten::__isnot__") && n.args.size() == 2 &&
             n.args[0].kind == ir::Arg::Kind::Ref && n.args[1].kind == ir::Arg::Kind::Ref &&
             n.args[0].ref == n.args[1].ref) {
    // `query is key` on one value (nn.MultiheadAttention's self-attention check): known here.
    Val v;
    v.kind = Val::Kind::Bool;
    v.b = t == "aten::__is__";
    cx.set_output(v);
  } else if (t == "prim::ListUnpack") {
    Val in = cx.arg(0);
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      Val v;
      if (in.kind == Val::Kind::IntList && i < in.ints.size()) {
        v.kind = Val::Kind::Int;
        v.i = in.ints[i];
      } else if (in.kind == Val::Kind::TensorList && i < in.tensors.size()) {
        v.kind = Val::Kind::Tensor;
        v.comp = in.tensors[i];
        cx.out.host_ops.pop_back();  // unpacking a tensor list is bookkeeping, not a host op
      } else {
        throw LoweringError("prim::ListUnpack of an unsupported list");
      }
      cx.vals[n.outputs[i].name] = v;
    }
  } else if (t == "prim::ListConstruct") {
    cx.set_output(cx.value(ir::Arg::list(n.args)));
  } else if (t == "aten::__getitem__" && cx.arg(0).kind == Val::Kind::IntList) {
    // sizes[i] (x.shape[-1]): an element of a tracked size list.
    const auto ints = cx.arg(0).ints;
    Val v;
    v.kind = Val::Kind::Int;
    v.i = ints[cx.list_index(1, ints.size())];
    cx.set_output(v);
  } else if ((size_tensor && t != "prim::NumToTensor") || t == "aten::floordiv" || t == "aten::add" || t == "aten::sub" || t == "aten::mul" || t == "aten::remainder") {
    Sym a = int_of(0), b = int_of(1);
    if (!a || !b) {
      // float arithmetic on static numbers
      Val v;
      v.kind = Val::Kind::Float;
      double x = cx.number(0), y = cx.number(1);
      v.f = t == "aten::add" ? x + y : t == "aten::sub" ? x - y : t == "aten::mul" ? x * y : x / y;
      cx.set_output(v);
    } else {
      if (size_tensor && n.args.size() > 2 && (!int_of(2) || !sym_is_const(int_of(2)) || int_of(2)->value != 1))
        throw LoweringError(t + " on a size with alpha other than 1");
      Op op = t == "aten::floordiv" || t == "aten::floor_divide" ? Op::FloorDiv : t == "aten::add" ? Op::Add : t == "aten::sub" ? Op::Sub
              : t == "aten::mul" ? Op::Mul : Op::Mod;
      Val v;
      v.kind = Val::Kind::Int;
      v.i = sym_binary(op, a, b);
      cx.set_output(v);
    }
  } else if (t == "aten::pow" || t == "aten::div" || t == "aten::Float" || t == "aten::sqrt") {
    Val v;
    v.kind = Val::Kind::Float;
    double x = cx.number(0);
    v.f = t == "aten::pow" ? std::pow(x, cx.number(1)) : t == "aten::div" ? x / cx.number(1)
          : t == "aten::sqrt" ? std::sqrt(x) : x;
    cx.set_output(v);
  } else if (t == "aten::gt" || t == "aten::lt" || t == "aten::ge" || t == "aten::le" || t == "aten::eq" ||
             t == "aten::ne" || t == "aten::__not__" || t == "aten::__and__" || t == "aten::__or__") {
    // Conditions capture already decided and guarded; their value only matters to host code,
    // unless a number is made of it (float(x.dtype == torch.float32)): static numbers compare here.
    auto is_number = [&](size_t i) {
      if (i >= n.args.size()) return false;
      Val a = cx.arg(i);
      return a.kind == Val::Kind::Float || a.kind == Val::Kind::Bool ||
             (a.kind == Val::Kind::Int && a.i && sym_is_const(a.i));
    };
    Val v;
    v.kind = Val::Kind::Other;
    if (n.args.size() == 2 && t != "aten::__not__" && is_number(0) && is_number(1)) {
      const double x = cx.number(0), y = cx.number(1);
      v.kind = Val::Kind::Bool;
      v.b = t == "aten::gt" ? x > y : t == "aten::lt" ? x < y : t == "aten::ge" ? x >= y : t == "aten::le" ? x <= y
            : t == "aten::eq" ? x == y : t == "aten::ne" ? x != y : t == "aten::__and__" ? (x != 0 && y != 0)
                                                                   : (x != 0 || y != 0);
    } else if (t == "aten::__not__" && is_number(0)) {
      v.kind = Val::Kind::Bool;
      v.b = cx.number(0) == 0;
    }
    cx.set_output(v);
  } else if (t == "prim::NumToTensor") {
    Val v;
    v.kind = Val::Kind::Int;
    v.i = int_of(0);
    if (!v.i) throw LoweringError("prim::NumToTensor of a value that is not an int");
    cx.set_output(v);
  } else if (t == "aten::Int" || t == "aten::ScalarImplicit" || t == "aten::IntImplicit") {
    Val v;
    v.kind = Val::Kind::Int;
    Sym i = int_of(0);
    v.i = i ? i : sym_const(static_cast<int64_t>(cx.number(0)));
    cx.set_output(v);
  } else {
    // Other host values (strings for messages, None, devices, bools): the interpreter computes them
    // at run time; only sizes must be known here, so an unknown op yielding a number still fails.
    for (const auto& o : n.outputs)
      if (o.meta.kind == ir::ValueMeta::Kind::Int || o.meta.kind == ir::ValueMeta::Kind::Float)
        throw LoweringError(t + " is a host op Kiln does not evaluate");
    for (const auto& o : n.outputs) {
      Val v;
      v.kind = Val::Kind::Other;
      cx.vals[o.name] = v;
    }
  }
}

// Dtypes generated kernels store: 16-bit floats as float32 math with rounding stores (as Inductor
// does), integers and bool exactly. float64 math would need double kernels: it runs eagerly.
bool kernel_dtype(ir::DType t) {
  switch (t) {
    case ir::DType::Float32: case ir::DType::Float16: case ir::DType::BFloat16: case ir::DType::Bool:
    case ir::DType::Int64: case ir::DType::Int32: case ir::DType::Int16: case ir::DType::Int8: case ir::DType::UInt8:
      return true;
    default: return false;
  }
}

// The computations a node's lowering made store in the node's dtypes (intermediates of a
// decomposition stay float32). An integer result must come from exact integer arithmetic.
void set_output_dtypes(LoweringContext& cx, size_t first_new) {
  for (const auto& o : cx.node->outputs) {
    if (!o.meta.is_tensor()) continue;
    auto it = cx.vals.find(o.name);
    if (it == cx.vals.end() || it->second.kind != Val::Kind::Tensor) continue;
    const int c = it->second.comp;
    if (c < static_cast<int>(first_new)) continue;
    Comp& comp = cx.prog().comps[c];
    if (comp.kind != Comp::Kind::Pointwise && comp.kind != Comp::Kind::Reduction) continue;
    const auto dt = o.meta.dtype == ir::DType::Unknown ? ir::DType::Float32 : o.meta.dtype;
    const bool integer = dt != ir::DType::Bool && dt != ir::DType::Float32 && dt != ir::DType::Float16 &&
                         dt != ir::DType::BFloat16;
    if (integer && (comp.kind == Comp::Kind::Reduction || !ve_exact_int(comp.body, cx.prog().comps)))
      throw LoweringError(std::string(ir::dtype_name(dt)) + " result of arithmetic that is not exact in integers");
    comp.dtype = dt;
  }
}

void lower_extern(LoweringContext& cx, bool fallback, const std::string& why) {
  const ir::Node& n = *cx.node;
  // One tensor, and possibly undefined tensors after it (the attention weights of
  // _native_multi_head_attention with need_weights=False): the extern makes the first.
  auto undefined_tensor = [](const ir::ValueMeta& m) {
    return m.is_tensor() && m.dtype == ir::DType::Unknown && m.shape.empty();
  };
  bool one_tensor = !n.outputs.empty() && n.outputs[0].meta.is_tensor() && !undefined_tensor(n.outputs[0].meta);
  for (size_t i = 1; i < n.outputs.size(); ++i) one_tensor = one_tensor && undefined_tensor(n.outputs[i].meta);
  if (!one_tensor)
    throw LoweringError(n.target + " returns " + std::to_string(n.outputs.size()) + " values; only single tensors run as externs");
  for (size_t i = 1; i < n.outputs.size(); ++i) {
    Val none;
    none.kind = Val::Kind::Other;
    none.unknown = n.target + " output " + std::to_string(i) + " is an undefined tensor";
    cx.vals[n.outputs[i].name] = none;
  }
  Comp c;
  c.kind = fallback ? Comp::Kind::Fallback : Comp::Kind::Extern;
  c.sizes = meta_sizes(n.outputs[0].meta);
  c.dtype = n.outputs[0].meta.dtype;
  c.ir_node = cx.node_index;
  c.target = n.target;
  c.why_fallback = why;
  c.name = n.name();
  std::function<void(const ir::Arg&)> deps = [&](const ir::Arg& a) {
    Val v = cx.value(a);
    if (v.kind == Val::Kind::Tensor) c.deps.push_back(v.comp);
    if (v.kind == Val::Kind::TensorList)
      for (int t : v.tensors) c.deps.push_back(t);
  };
  for (const auto& a : n.args) {
    Val v = cx.value(a);
    c.operands.push_back(v.kind == Val::Kind::Tensor ? v.comp : -1);
    deps(a);
  }
  std::sort(c.deps.begin(), c.deps.end());
  c.deps.erase(std::unique(c.deps.begin(), c.deps.end()), c.deps.end());
  // linear(input, weight, bias) and addmm(bias, mat1, mat2, beta=1, alpha=1) add a bias to a product.
  auto one = [&](size_t i) {
    if (i >= n.args.size()) return true;  // the default
    Val v = cx.value(n.args[i]);
    return (v.kind == Val::Kind::Int && capture::sym_is_const(v.i) && v.i->value == 1) ||
           (v.kind == Val::Kind::Float && v.f == 1.0);
  };
  if (!fallback && c.target == "aten::linear" && c.operands.size() >= 3) c.bias_operand = 2;
  if (!fallback && c.target == "aten::addmm" && c.operands.size() >= 3 && one(3) && one(4)) c.bias_operand = 0;
  // conv2d(input, weight, bias, ...): cuDNN adds the bias with a kernel of its own (ATen's broadcast add).
  if (!fallback && c.target == "aten::conv2d" && c.operands.size() == 7) c.bias_operand = 2;
  int id = cx.add(std::move(c));
  Val v;
  v.kind = Val::Kind::Tensor;
  v.comp = id;
  cx.set_output(v);
  if (fallback) cx.out.fallbacks.push_back(n.target + " (" + n.name() + "): " + why);
}

LoweredRegion lower_with(const ir::Graph& graph, const AttentionPlan& attention, const LowerOptions& options) {
  LoweringContext cx{graph, {}, {}, -1, nullptr};
  cx.pool_windows = options.pool_windows;
  auto& prog = cx.prog();
  int input_pos = 0;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const ir::Node& n = graph.nodes[i];
    cx.node_index = static_cast<int>(i);
    cx.node = &n;
    if (n.op == ir::NodeOp::Placeholder) {
      const auto& m = n.outputs[0].meta;
      Val v;
      if (m.is_tensor() && m.dtype == ir::DType::Unknown && m.shape.empty()) {
        v.kind = Val::Kind::Other;  // an undefined tensor (an absent optional): nothing to load
      } else if (m.is_tensor()) {
        Comp c;
        c.kind = Comp::Kind::Input;
        c.name = n.name();
        c.sizes = meta_sizes(m);
        c.dtype = m.dtype;
        c.input = input_pos;
        c.provenance.push_back(n.name());
        for (const auto& d : m.shape)
          if (d.is_symbolic() && std::find(prog.symbols.begin(), prog.symbols.end(), d.symbol) == prog.symbols.end())
            prog.symbols.push_back(d.symbol);
        prog.comps.push_back(std::move(c));
        v.kind = Val::Kind::Tensor;
        v.comp = static_cast<int>(prog.comps.size()) - 1;
      } else if (m.kind == ir::ValueMeta::Kind::Float || m.kind == ir::ValueMeta::Kind::Int ||
                 m.kind == ir::ValueMeta::Kind::Bool) {
        v.kind = Val::Kind::ScalarInput;
        v.scalar = static_cast<int>(prog.scalar_inputs.size());
        v.scalar_is_int = m.kind != ir::ValueMeta::Kind::Float;
        prog.scalar_inputs.push_back(n.name());
        prog.scalar_input_positions.push_back(input_pos);
      } else {
        v.kind = Val::Kind::Other;
      }
      cx.vals[n.name()] = v;
      ++input_pos;
      continue;
    }
    if (n.op == ir::NodeOp::GetAttr) {
      Comp c;
      c.kind = Comp::Kind::Constant;
      c.name = n.name();
      c.attr = n.target;
      c.sizes = meta_sizes(n.outputs[0].meta);
      c.dtype = n.outputs[0].meta.dtype;
      c.ir_node = static_cast<int>(i);
      c.provenance.push_back(n.name());
      prog.comps.push_back(std::move(c));
      Val v;
      v.kind = Val::Kind::Tensor;
      v.comp = static_cast<int>(prog.comps.size()) - 1;
      cx.vals[n.name()] = v;
      continue;
    }
    if (n.op == ir::NodeOp::Output) {
      for (const auto& a : n.args) {
        Val v = cx.value(a);
        // A tuple or list of tensors (a model returning several): its elements are the outputs.
        if (v.kind == Val::Kind::TensorList) {
          for (int c : v.tensors) prog.outputs.push_back(c);
          continue;
        }
        if (v.kind != Val::Kind::Tensor) throw LoweringError("region output %" + a.ref + " is not a tensor");
        prog.outputs.push_back(v.comp);
      }
      continue;
    }
    if (attention.dead.count(static_cast<int>(i))) continue;  // only its attention call read it
    if (auto at = attention.at.find(static_cast<int>(i)); at != attention.at.end()) {
      lower_attention(cx, at->second);
      continue;
    }
    if (lower_host_op(cx)) continue;
    const std::string& t = n.target;
    std::string bad_dtype;
    for (const auto& o : n.outputs) {
      const bool undefined = o.meta.dtype == ir::DType::Unknown && o.meta.shape.empty();  // an absent tensor
      if (o.meta.is_tensor() && !undefined && !kernel_dtype(o.meta.dtype)) bad_dtype = ir::dtype_name(o.meta.dtype);
    }
    if (options.depthwise && bad_dtype.empty()) {
      const size_t before = prog.comps.size();
      if (lower_depthwise_conv(cx)) {
        set_output_dtypes(cx, before);
        continue;
      }
    }
    if (extern_ops().count(t)) {
      lower_extern(cx, false, "");
      continue;
    }
    bool done = false;
    if (is_inplace_op(t) && !n.args.empty()) {
      // Mutating a region input or a parameter: eager runs it on the tensor itself, so callers see it.
      Val target = cx.arg(0);
      if (target.kind == Val::Kind::Tensor && (cx.comp(target.comp).kind == Comp::Kind::Input ||
                                               cx.comp(target.comp).kind == Comp::Kind::Constant)) {
        lower_extern(cx, true, "mutates a region input or parameter in place");
        continue;
      }
    }
    if (bad_dtype.empty()) {
      const size_t before = prog.comps.size();
      try {
        done = lower_view_op(cx, t) || lower_pointwise_op(cx, t) || lower_reduction_op(cx, t);
        if (done) set_output_dtypes(cx, before);
      } catch (const LoweringError& e) {
        lower_extern(cx, true, e.what());
        continue;
      }
    }
    if (!done)
      lower_extern(cx, true, bad_dtype.empty() ? "no lowering for " + t : bad_dtype + " results run eagerly (kernels compute float32, float16, bfloat16, integers and bool)");
  }
  for (const auto& [name, v] : cx.vals)
    if (v.kind == Val::Kind::Tensor) cx.out.tensor_of[name] = v.comp;
  auto problems = verify(prog);
  if (!problems.empty()) throw LoweringError("lowering produced invalid loop IR: " + problems.front());
  return std::move(cx.out);
}

}  // namespace

LoweredRegion lower_graph(const ir::Graph& captured, const LowerOptions& options) {
  // In-place ops become functional first; node positions stay, so IR indices still match.
  const ir::Graph graph = functionalize(captured);
  if (!options.attention) return lower_with(graph, {}, options);
  // A chain whose scale lowering cannot read as a number is lowered as written, in a second pass without it.
  std::set<int> declined;
  for (;;) {
    try {
      return lower_with(graph, find_attention(graph, declined, options.attention_float32), options);
    } catch (const AttentionDeclined& d) {
      if (!declined.insert(d.node).second) throw LoweringError("attention at node " + std::to_string(d.node) + " declined twice");
    }
  }
}

}  // namespace kiln::lowering
