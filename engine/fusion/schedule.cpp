#include "engine/fusion/schedule.h"

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "engine/lowering/channels_last.h"
#include "engine/lowering/index_simplify.h"

namespace kiln::fusion {

using lowering::IExpr;
using lowering::IExprNode;
using lowering::VExpr;
using lowering::VExprNode;
using Kind = Comp::Kind;

namespace {

bool computes(const Comp& c) { return c.kind == Kind::Pointwise || c.kind == Kind::Reduction; }

std::string sizes_key(const std::vector<Sym>& s) {
  std::string k;
  for (const auto& x : s) k += capture::sym_str(x) + ",";
  return k;
}

// Loads of computation `target` anywhere in e, with their indices.
void loads_of(const VExpr& e, int target, std::vector<const VExprNode*>& out) {
  if (!e) return;
  if (e->op == VExprNode::Op::Load && e->comp == target) out.push_back(e.get());
  loads_of(e->a, target, out);
  loads_of(e->b, target, out);
  loads_of(e->c, target, out);
}

void all_loads(const VExpr& e, std::set<int>& out) {
  if (!e) return;
  if (e->op == VExprNode::Op::Load) out.insert(e->comp);
  all_loads(e->a, out);
  all_loads(e->b, out);
  all_loads(e->c, out);
}

bool index_is_rows(const std::vector<IExpr>& idx, size_t k) {
  if (idx.size() != k) return false;
  for (size_t i = 0; i < k; ++i)
    if (idx[i]->op != IExprNode::Op::Var || idx[i]->var != static_cast<int>(i)) return false;
  return true;
}

// The elements a computation visits, as the multiset of its extents other than 1 (a reduction's
// rows and reduced extents together): equal keys, equal element counts, symbolic sizes included.
std::multiset<std::string> visit_key(const Comp& c) {
  std::multiset<std::string> k;
  for (const auto* dims : {&c.sizes, &c.reduce_sizes})
    for (const auto& x : *dims) {
      std::string s = capture::sym_str(x);
      if (s != "1") k.insert(s);
    }
  return k;
}

bool same_index(const std::vector<IExpr>& a, const std::vector<IExpr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t d = 0; d < a.size(); ++d)
    if (!lowering::ie_equal(a[d], b[d])) return false;
  return true;
}

bool prefix(const std::vector<Sym>& outer, const std::vector<Sym>& sizes) {
  if (outer.size() > sizes.size()) return false;
  for (size_t i = 0; i < outer.size(); ++i)
    if (capture::sym_str(outer[i]) != capture::sym_str(sizes[i])) return false;
  return true;
}

// The known extents of sizes, or nothing when one is symbolic.
std::optional<std::vector<int64_t>> const_extents(const std::vector<Sym>& sizes) {
  std::vector<int64_t> out;
  for (const auto& s : sizes) {
    if (!capture::sym_is_const(s) || s->value < 0) return std::nullopt;
    out.push_back(s->value);
  }
  return out;
}

int64_t product(const std::vector<int64_t>& v) {
  int64_t n = 1;
  for (int64_t x : v) n *= x;
  return n;
}

// Computation c as a stage of a row kernel over `outer` whose sizes fold the rows: its leading dims
// hold as many elements as the rows (a layer_norm's [8, 128] rows for its output viewed [1024, 768]).
// Its index becomes the rows' flat index decomposed into those dims, then the kernel's inner vars;
// its body is read at that index, simplified over the kernel's extents.
std::optional<RowStage> fold_rows(const Comp& c, const std::vector<Sym>& outer) {
  auto rows = const_extents(outer), sizes = const_extents(c.sizes);
  if (!rows || !sizes || !c.body) return std::nullopt;
  size_t a = 0;
  int64_t lead = 1;
  while (a < sizes->size() && lead < product(*rows)) lead *= (*sizes)[a++];
  if (a == 0 || lead != product(*rows)) return std::nullopt;
  const size_t o = outer.size();
  IExpr flat = lowering::ie_const(0);
  for (size_t j = 0; j < o; ++j) {
    int64_t stride = 1;
    for (size_t l = j + 1; l < o; ++l) stride *= (*rows)[l];
    flat = lowering::ie_add(flat, lowering::ie_mul(lowering::ie_var(static_cast<int>(j)), lowering::ie_const(stride)));
  }
  std::vector<int64_t> ext = *rows;
  RowStage st;
  for (size_t d = a; d < sizes->size(); ++d) {
    st.inner.push_back(c.sizes[d]);
    ext.push_back((*sizes)[d]);
  }
  for (size_t d = 0; d < a; ++d) {
    int64_t below = 1;
    for (size_t l = d + 1; l < a; ++l) below *= (*sizes)[l];
    IExpr v = below == 1 ? flat : lowering::ie_floordiv(flat, lowering::ie_const(below));
    if (d > 0) v = lowering::ie_mod(v, lowering::ie_const((*sizes)[d]));
    st.index.push_back(lowering::ie_simplify(v, ext));
  }
  for (size_t d = a; d < sizes->size(); ++d) st.index.push_back(lowering::ie_var(static_cast<int>(o + d - a)));
  st.body = lowering::ve_simplify(lowering::ve_subst(c.body, st.index), ext);
  return st;
}

// Loads in e of computations kernel `k` computes are at the current row: a reduction's at the row
// itself, a pointwise stage's along it (its first `outer` index dims the row's vars).
bool reads_own_rows(const VExpr& e, const std::vector<int>& kernel_of, int k, const std::vector<Comp>& comps, size_t outer) {
  if (!e) return true;
  if (e->op == VExprNode::Op::Load && e->comp >= 0 && kernel_of[static_cast<size_t>(e->comp)] == k) {
    const Comp& r = comps[static_cast<size_t>(e->comp)];
    if (r.kind == Kind::Reduction ? !index_is_rows(e->index, outer) : e->index.size() < outer) return false;
    for (size_t d = 0; d < outer; ++d)
      if (e->index[d]->op != IExprNode::Op::Var || e->index[d]->var != static_cast<int>(d)) return false;
  }
  return reads_own_rows(e->a, kernel_of, k, comps, outer) && reads_own_rows(e->b, kernel_of, k, comps, outer) &&
         reads_own_rows(e->c, kernel_of, k, comps, outer);
}

}  // namespace

RowStage row_stage(const LoopProgram& program, const FusedKernel& k, int comp) {
  auto it = k.folded.find(comp);
  if (it != k.folded.end()) return it->second;
  const Comp& c = program.comps[static_cast<size_t>(comp)];
  RowStage st;
  st.inner.assign(c.sizes.begin() + static_cast<std::ptrdiff_t>(std::min(c.sizes.size(), k.outer.size())), c.sizes.end());
  st.body = c.body;
  for (size_t d = 0; d < c.sizes.size(); ++d) st.index.push_back(lowering::ie_var(static_cast<int>(d)));
  return st;
}

bool row_prologue(const LoopProgram& program, const FusedKernel& k, int comp) {
  if (k.kind != FusedKernel::Kind::Row) return false;
  for (int c : k.comps) {
    if (program.comps[static_cast<size_t>(c)].kind == Kind::Reduction) return false;
    if (c == comp) return true;
  }
  return false;
}

namespace {

// Whether e computes a transcendental function (an exponential, a logarithm, a trigonometric or error function).
bool transcendental(const VExpr& e) {
  if (!e) return false;
  if (e->op == VExprNode::Op::Unary) {
    static const std::set<std::string> fns = {"exp", "exp2", "expm1", "log", "log1p", "log2", "sigmoid", "tanh",
                                              "erf", "erfc", "sin", "cos", "tan", "pow"};
    if (fns.count(e->fn)) return true;
  }
  if (e->op == VExprNode::Op::Binary && e->fn == "pow") return true;
  return transcendental(e->a) || transcendental(e->b) || transcendental(e->c);
}

// How many loads e makes.
size_t load_count(const VExpr& e) {
  if (!e) return 0;
  if (e->op == VExprNode::Op::Binary && lowering::ve_is_index_fn(*e)) return 0;
  return (e->op == VExprNode::Op::Load ? 1 : 0) + load_count(e->a) + load_count(e->b) + load_count(e->c);
}

// A convolution lowered as arithmetic (a depthwise one's window of taps).
bool window_conv(const Comp& c) { return c.kind == Kind::Pointwise && lowering::is_conv2d_target(c.target); }

// A max_pool2d lowered as the max of its window's taps (lowering::LowerOptions::pool_windows).
bool pool_window(const Comp& c) { return c.kind == Kind::Pointwise && c.target == "aten::max_pool2d"; }

// The distinct positions at which e reads computation `comp`.
size_t positions_of(const VExpr& e, int comp) {
  std::vector<const VExprNode*> ls, distinct;
  loads_of(e, comp, ls);
  for (const auto* l : ls) {
    bool known = false;
    for (const auto* d : distinct) known = known || same_index(d->index, l->index);
    if (!known) distinct.push_back(l);
  }
  return distinct.size();
}

// Whether view `v` only reorders computation `p` into p's own storage order: its body one load of p whose index is a
// permutation of the view's variables such that walking the view row-major walks p's memory in order (ConvNeXt's
// permute(0, 2, 3, 1) of a channels-last [N, C, H, W]: the same bytes in the same order, a [N, H, W, C] tensor).
bool view_in_storage_order(const Comp& v, int p, const Comp& producer) {
  if (!v.is_view || !v.body || v.body->op != VExprNode::Op::Load || v.body->comp != p) return false;
  const auto& idx = v.body->index;
  const std::vector<int> order = lowering::storage_order(producer);
  if (idx.size() != order.size() || v.sizes.size() != idx.size()) return false;
  for (size_t k = 0; k < order.size(); ++k) {
    const IExpr& at = idx[static_cast<size_t>(order[k])];
    if (at->op != IExprNode::Op::Var || at->var != static_cast<int>(k)) return false;
  }
  return true;
}

// When view `v` is a pure permutation of computation `p` (its body one load of p, each index a different one of its
// variables, as many as p has dims): per view dim, p's dim behind it; nothing otherwise.
std::optional<std::vector<int64_t>> permutation_of(const Comp& v, int p, const Comp& producer) {
  if (!v.is_view || !v.body || v.body->op != VExprNode::Op::Load || v.body->comp != p) return std::nullopt;
  const auto& idx = v.body->index;
  const size_t rank = v.sizes.size();
  if (idx.size() != rank || producer.sizes.size() != rank || rank == 0) return std::nullopt;
  std::vector<int64_t> dims(rank, -1);
  for (size_t d = 0; d < rank; ++d) {
    const auto& i = idx[d];
    if (!i || i->op != IExprNode::Op::Var || i->var < 0 || i->var >= static_cast<int>(rank) || dims[static_cast<size_t>(i->var)] >= 0)
      return std::nullopt;
    dims[static_cast<size_t>(i->var)] = static_cast<int64_t>(d);
  }
  return dims;
}

// Whether view `v` (computation `vi` of prog) is a pure permutation of computation `p` (its body one load of p, each index one of the view's
// variables, none twice) that every one of its readers (pointwise kernels) reads walking p's memory in order: the
// reader's innermost variable (its storage order's last dim, the one its threads step through) indexes the view's dim
// that lands on p's innermost stored dim, at every load of the view. Such readers read p through the view as
// contiguously as they would read the view stored, so p is stored and the permute costs nothing (ConvNeXt's
// LayerNorm2d: layer_norm over [N, H, W, C] rows, permute(0, 3, 1, 2), then a channels-last depthwise convolution and
// residual add reading it channel innermost; computed inside the permute, stored row-major [N, C, H, W], the first
// stage's depthwise kernel read it 56·56 floats apart: 0.175 ms at batch 8 on the H200, the other blocks' 0.023).
bool permute_read_in_order(const LoopProgram& prog, int vi, int p, const std::vector<int>& readers) {
  const Comp& v = prog.comps[static_cast<size_t>(vi)];
  const Comp& producer = prog.comps[static_cast<size_t>(p)];
  if (readers.empty() || !permutation_of(v, p, producer)) return false;
  const auto& idx = v.body->index;
  const int inner = lowering::storage_order(producer).back();
  const int j = idx[static_cast<size_t>(inner)]->var;  // the view's dim walking p's memory innermost
  for (int w : readers) {
    const Comp& r = prog.comps[static_cast<size_t>(w)];
    if (r.kind != Kind::Pointwise || r.sizes.size() != v.sizes.size()) return false;
    const int own = lowering::storage_order(r).back();
    std::vector<const VExprNode*> ls;
    loads_of(r.body, vi, ls);
    if (ls.empty()) return false;
    for (const auto* l : ls) {
      if (l->index.size() != idx.size()) return false;
      const IExpr& at = l->index[static_cast<size_t>(j)];
      if (at->op != IExprNode::Op::Var || at->var != own) return false;
    }
  }
  return true;
}

// Whether view `v`, a pure permutation of computation `p` of the same dtype, keeps each element where p's buffer keeps
// it: p's k-th stored dim is the view's k-th stored dim, for every k. p's buffer permuted into the view's dims is then
// the view's buffer, byte for byte (ConvNeXt's downsampling LayerNorm2d: layer_norm over [N, H, W, C] rows,
// permute(0, 3, 1, 2) stored channels-last for the convolution). The permutation, when so.
std::optional<std::vector<int64_t>> same_storage_view(const Comp& v, int p, const Comp& producer) {
  auto dims = permutation_of(v, p, producer);
  if (!dims || v.dtype != producer.dtype) return std::nullopt;
  const std::vector<int> ov = lowering::storage_order(v), op = lowering::storage_order(producer);
  for (size_t k = 0; k < ov.size(); ++k) {
    const auto vd = static_cast<size_t>(ov[k]);
    if ((*dims)[vd] != op[k] || capture::sym_str(v.sizes[vd]) != capture::sym_str(producer.sizes[static_cast<size_t>(op[k])]))
      return std::nullopt;
  }
  return dims;
}

}  // namespace

bool reads_a_window(const VExpr& e) {
  std::set<int> read;
  all_loads(e, read);
  for (int c : read)
    if (positions_of(e, c) >= 4) return true;
  return false;
}

bool reads_a_convolution_window(const VExpr& e) {
  std::set<int> read;
  all_loads(e, read);
  int windows = 0;
  for (int c : read) windows += positions_of(e, c) >= 4;
  return windows >= 2;
}

FusedProgram schedule(const LoopProgram& input, const FusionOptions& options) {
  FusedProgram fp;
  fp.program = input;
  auto& comps = fp.program.comps;
  const size_t n = comps.size();
  std::vector<std::vector<int>> users(n);
  for (size_t i = 0; i < n; ++i)
    for (int d : comps[i].deps) users[d].push_back(static_cast<int>(i));
  std::set<int> outputs(input.outputs.begin(), input.outputs.end());

  // 1. Which computations get a buffer.
  fp.realized.assign(n, false);
  std::vector<VExpr> inlined(n);  // bodies with non-realized loads substituted
  std::set<std::pair<int, int>> decided;  // the first reason for a pair is the one that holds
  auto decide = [&](int p, int c, bool fused, const std::string& why) {
    if (!decided.insert({p, c}).second) return;
    fp.decisions.push_back(Decision{comps[p].name, comps[c].name, fused, why});
  };
  // A pair kept apart by the inlining rules that ends in one kernel after all (a stored stage its
  // row kernel reads back): the kernel's reason first, then why it is stored.
  auto join = [&](int p, int c, const std::string& why) {
    for (auto& d : fp.decisions)
      if (d.first == comps[p].name && d.second == comps[c].name) {
        if (!d.fused) d.reason = why + " (stored, not inlined: " + d.reason + ")";
        d.fused = true;
        return;
      }
    decide(p, c, true, why);
  };
  std::function<VExpr(const VExpr&)> substitute = [&](const VExpr& e) -> VExpr {
    if (!e) return e;
    switch (e->op) {
      case VExprNode::Op::Load:
        if (!fp.realized[e->comp]) return lowering::ve_subst(inlined[e->comp], e->index);
        return e;
      case VExprNode::Op::Unary: return lowering::ve_unary(e->fn, substitute(e->a));
      case VExprNode::Op::Binary:
        if (lowering::ve_is_index_fn(*e)) return e;
        return lowering::ve_binary(e->fn, substitute(e->a), substitute(e->b));
      case VExprNode::Op::Where: return lowering::ve_where(substitute(e->c), substitute(e->a), substitute(e->b));
      default: return e;
    }
  };
  for (size_t i = 0; i < n; ++i) {
    Comp& c = comps[i];
    if (c.body) inlined[i] = substitute(c.body);
    if (!computes(c)) {
      fp.realized[i] = true;
      continue;
    }
    if (c.kind == Kind::Reduction || outputs.count(static_cast<int>(i))) {
      fp.realized[i] = true;
      continue;
    }
    if (users[i].empty()) continue;  // dead
    bool extern_user = false, externs_only = true;
    for (int u : users[i]) {
      extern_user |= !computes(comps[u]);
      externs_only = externs_only && !computes(comps[u]);
    }
    // A view only extern calls read, of a stored computation whose buffer holds its elements where the view's own
    // would: the view is that buffer, permuted (fp.buffer_views), and no kernel copies it.
    if (externs_only && c.is_view && c.body && c.body->op == VExprNode::Op::Load) {
      const int p = c.body->comp;  // an earlier computation (loads point backwards)
      const Comp& producer = comps[static_cast<size_t>(p)];
      if (auto dims = fp.realized[static_cast<size_t>(p)] && computes(producer) ? same_storage_view(c, p, producer) : std::nullopt) {
        fp.realized[i] = true;
        fp.buffer_views[static_cast<int>(i)] = {p, std::move(*dims)};
        continue;
      }
    }
    // Cheap to recompute in each consumer: judged on what inlining would copy there (its own body
    // with every input it inlines substituted), not on its own body alone: a residual stream of
    // adds, each cheap by itself, would otherwise be recomputed from its start in every layer.
    bool cheap = lowering::ve_size(inlined[i]) <= 3;
    // Recomputed rather than stored: a producer whose few consumers each read every element of it
    // once (its own range pointwise, or a reduction over it), when recomputing moves no more bytes
    // than storing it and reading it back: consumers x full-size inputs <= full-size inputs + one
    // write + one read per consumer (an SE block's activation, read by its pooling and its scaling).
    bool recompute = false;
    // Never a window (a generated depthwise convolution's taps): each consumer would sum it again, and a row
    // kernel's strided walk over the taps ran a pooling 7-15x slower on the H200 (efficientnet_b0).
    if (!cheap && users[i].size() > 1 && users[i].size() <= 3 && !extern_user &&
        lowering::ve_size(inlined[i]) <= options.recompute_limit && !reads_a_window(inlined[i])) {
      const auto key = visit_key(c);
      // Consumer u reads each element of producer p once: its loads of p are at one index (one
      // read: the kernel computes the same expression once, as a variance's (x - mean) * (x - mean)),
      // it visits as many elements, and where it is a view (inlined in turn into its own readers)
      // so does each of them: a slice or a broadcast further on would read it unevenly.
      std::function<bool(int, int, int)> reads_once = [&](int producer, int u, int depth) {
        std::vector<const VExprNode*> ls;
        loads_of(comps[u].body, producer, ls);
        bool ok = !ls.empty() && visit_key(comps[u]) == key && depth < 8;
        for (const auto* l : ls) ok &= same_index(l->index, ls.front()->index);
        if (ok && comps[u].is_view)
          for (int w : users[u]) ok &= computes(comps[w]) && reads_once(u, w, depth + 1);
        return ok;
      };
      bool once_each = true;
      for (int u : users[i]) once_each &= reads_once(static_cast<int>(i), u, 0);
      std::set<int> inputs;
      all_loads(inlined[i], inputs);
      size_t full = 0;
      for (int r : inputs) full += visit_key(comps[r]) == key ? 1 : 0;
      const size_t k = users[i].size();
      recompute = once_each && k * full <= full + 1 + k;
    }
    // A generated depthwise convolution (lowering::LowerOptions::depthwise), and each step of its epilogue in turn,
    // goes into its one consumer whatever its size when that consumer reads it once, at one position (its batch
    // norm, then the activation): the window's sum is computed once either way, and the epilogue needs no buffers.
    auto epilogue_of_window = [&](int p) {
      return users[p].size() == 1 && reads_a_window(inlined[p]) && positions_of(comps[users[p][0]].body, p) == 1;
    };
    // A generated convolution reading it around each position (a depthwise window's taps) would compute it once per
    // tap: stored once instead when that means a transcendental per tap (a SiLU's exp) or loads of its own per tap
    // (a window in a window); plain arithmetic on one input (a batch norm with ReLU or hardswish) is recomputed, which
    // saves writing and reading back the whole tensor. A pooling's window of taps (lowering::LowerOptions::
    // pool_windows) likewise stores a transcendental (a SiLU before a 5x5 stride-1 pooling would take 10 exps per
    // output), and recomputes the rest: ResNet's stem pooling, its batch norm and ReLU inside, reads the convolution's
    // output once (23.6 -> 8.2 us on the H200 at batch 8; Inductor stores them, 10 us, then pools).
    size_t positions = 0;
    const Comp* reader = users[i].size() == 1 ? &comps[users[i][0]] : nullptr;
    if (!cheap && reader &&
        ((window_conv(*reader) && (transcendental(inlined[i]) || load_count(inlined[i]) >= 4)) ||
         (pool_window(*reader) && transcendental(inlined[i]))))
      positions = positions_of(reader->body, static_cast<int>(i));
    // Its one reader a view that only reorders it in its storage order, which kernels (more than one, none an extern)
    // read: stored itself and the view read through for nothing, rather than computed inside the view, which would be
    // stored instead (the same bytes either way). The computation keeps its own kernel's form (a depthwise window's
    // taps shared along rows): ConvNeXt's depthwise convolutions computed inside their permute(0, 2, 3, 1) ran as a
    // plain pointwise kernel, 0.10 ms per first-stage block at batch 8 on the H200. Likewise a view that permutes it
    // for kernels that walk its memory in order through the view (permute_read_in_order).
    bool feeds_free_view = false, feeds_permute = false;
    if (!cheap && users[i].size() == 1) {
      const int v = users[i][0];
      const Comp& view = comps[static_cast<size_t>(v)];
      bool kernels_only = users[static_cast<size_t>(v)].size() > 1 && !outputs.count(v);
      for (int w : users[static_cast<size_t>(v)]) kernels_only = kernels_only && computes(comps[static_cast<size_t>(w)]);
      feeds_free_view = kernels_only && view_in_storage_order(view, static_cast<int>(i), c);
      feeds_permute = kernels_only && !feeds_free_view &&
                      permute_read_in_order(fp.program, v, static_cast<int>(i), users[static_cast<size_t>(v)]);
    }
    // Its one reader a view that extern calls alone read, keeping each element where this computation's buffer would:
    // stored here (in its own kernel's form: a layer norm's rows write it as their last stage), and the view is this
    // buffer, permuted, rather than a kernel computing it again into a buffer of the same bytes.
    bool feeds_extern_view = false;
    if (options.fuse && users[i].size() == 1 && c.kind == Kind::Pointwise) {
      const int v = users[i][0];
      bool only_externs = !users[static_cast<size_t>(v)].empty() && !outputs.count(v);
      for (int w : users[static_cast<size_t>(v)]) only_externs = only_externs && !computes(comps[static_cast<size_t>(w)]);
      feeds_extern_view = only_externs && same_storage_view(comps[static_cast<size_t>(v)], static_cast<int>(i), c).has_value();
    }
    std::string why;
    if (!options.fuse) why = "fusion disabled";
    else if (extern_user) why = "extern boundary: an extern call reads it, so it is written to a buffer";
    else if (feeds_extern_view)
      why = "its one reader, view " + comps[static_cast<size_t>(users[i][0])].name +
            ", keeps its elements where its buffer does for extern calls: stored here, the view that buffer permuted";
    else if (feeds_free_view)
      why = "its one reader, view " + comps[static_cast<size_t>(users[i][0])].name +
            ", only reorders it in its storage order for " + std::to_string(users[static_cast<size_t>(users[i][0])].size()) +
            " kernels: stored here, the view read through";
    else if (feeds_permute)
      why = "its one reader, view " + comps[static_cast<size_t>(users[i][0])].name + ", only permutes it for " +
            std::to_string(users[static_cast<size_t>(users[i][0])].size()) +
            " kernels that walk its memory in order through it: stored here, the view read through";
    else if (positions >= 4)
      why = "read at " + std::to_string(positions) + " positions by a window's taps: stored once, not computed at each";
    else if (users[i].size() > 1 && !cheap && !recompute)
      why = "used by " + std::to_string(users[i].size()) + " consumers: inlining would recompute it";
    else if (lowering::ve_size(inlined[i]) > options.inline_limit && !epilogue_of_window(static_cast<int>(i)))
      why = "size limit: expression too large to inline";
    if (!why.empty()) {
      fp.realized[i] = true;
      for (int u : users[i]) decide(static_cast<int>(i), u, false, why);
    } else if (recompute) {
      for (int u : users[i])
        decide(static_cast<int>(i), u, true,
               "recomputed in each of its " + std::to_string(users[i].size()) +
                   " consumers: each reads every element once, and storing it would move more bytes");
    } else {
      for (int u : users[i]) decide(static_cast<int>(i), u, true, "inlined into its consumer (vertical fusion)");
    }
  }
  for (size_t i = 0; i < n; ++i)
    if (fp.realized[i] && comps[i].body) comps[i].body = inlined[i];

  // 2. Kernels, in program order.
  std::vector<int> kernel_of(n, -1);
  int open_row = -1;       // the row kernel still accepting stages
  int last_pointwise = -1; // the pointwise kernel that may absorb an independent neighbour
  for (size_t i = 0; i < n; ++i) {
    const Comp& c = comps[i];
    if (!fp.realized[i] || c.kind == Kind::Input || c.kind == Kind::Constant || fp.buffer_views.count(static_cast<int>(i)))
      continue;
    if (!computes(c)) {
      fp.steps.push_back(Step{Step::Kind::Extern, static_cast<int>(i)});
      for (int d : c.deps)
        if (const int src = view_source(fp, d); src >= 0)
          decide(d, static_cast<int>(i), false,
                 "extern boundary: the extern call reads it as " + comps[static_cast<size_t>(src)].name +
                     "'s buffer, permuted (no copy)");
        else if (computes(comps[d])) decide(d, static_cast<int>(i), false, "extern boundary: the extern call needs a buffer");
      open_row = last_pointwise = -1;
      continue;
    }
    std::set<int> reads;
    all_loads(c.body, reads);
    auto many_rows = [&](const std::vector<Sym>& rows) {
      auto e = const_extents(rows);
      return e && product(*e) >= options.stage_rows;
    };
    auto depends_on_kernel = [&](int k) {
      for (int r : reads)
        if (kernel_of[r] == k) return true;
      return false;
    };
    if (options.fuse && open_row >= 0) {
      FusedKernel& g = fp.kernels[open_row];
      bool fits = c.kind == Kind::Reduction ? sizes_key(c.sizes) == sizes_key(g.outer) : prefix(g.outer, c.sizes);
      // A pointwise epilogue whose sizes fold the rows, read in the kernel's variables: only one that
      // reads the kernel's results (a computation merely next in program order, as an attention mask
      // after the embeddings' layer norm, would run per row for nothing).
      std::optional<RowStage> fold;
      if (!fits && c.kind == Kind::Pointwise && many_rows(g.outer) && depends_on_kernel(open_row)) {
        fold = fold_rows(c, g.outer);
        fits = fold.has_value();
      }
      // Reads of the group's own computations must be at the current row.
      if (fits) fits = reads_own_rows(fold ? fold->body : c.body, kernel_of, open_row, comps, g.outer.size());
      if (fits) {
        g.comps.push_back(static_cast<int>(i));
        kernel_of[i] = open_row;
        if (fold) g.folded[static_cast<int>(i)] = *fold;
        for (int r : reads)
          if (kernel_of[r] == open_row)
            join(r, static_cast<int>(i), fold ? "same rows, folded into fewer dims: one row kernel" : "same rows: one row kernel");
        continue;
      }
      for (int r : reads)
        if (kernel_of[r] == open_row)
          decide(r, static_cast<int>(i), false, "different iteration space: cannot share the row kernel");
      open_row = -1;
    }
    // The pointwise kernel just before a reduction that reads it along the rows becomes the row
    // kernel's first stage: each row's elements written, then read back by the same warp or block
    // (a residual add and the layer_norm after it), instead of a second kernel reading them again.
    if (c.kind == Kind::Reduction && options.fuse && last_pointwise >= 0 && !fp.steps.empty() &&
        fp.steps.back().kind == Step::Kind::Kernel && fp.steps.back().index == last_pointwise &&
        many_rows(c.sizes) && depends_on_kernel(last_pointwise)) {
      FusedKernel& g = fp.kernels[last_pointwise];
      bool fits = true;
      // Not a window (a depthwise convolution's taps): a row kernel walks its rows' elements apart, each tap's
      // loads strided (efficientnet_b0's squeeze-excitation poolings ran 7-15x slower so on the H200).
      for (int m : g.comps) fits &= prefix(c.sizes, comps[m].sizes) && !reads_a_window(comps[m].body);
      const int k_index = last_pointwise;
      if (fits) fits = reads_own_rows(c.body, kernel_of, k_index, comps, c.sizes.size());
      if (fits) {
        g.kind = FusedKernel::Kind::Row;
        g.outer = c.sizes;
        g.comps.push_back(static_cast<int>(i));
        kernel_of[i] = k_index;
        open_row = k_index;
        last_pointwise = -1;
        for (int r : reads)
          if (kernel_of[r] == k_index) join(r, static_cast<int>(i), "read along its rows: the row kernel's first stage");
        continue;
      }
    }
    if (c.kind == Kind::Reduction) {
      FusedKernel k;
      k.kind = FusedKernel::Kind::Row;
      k.outer = c.sizes;
      k.comps.push_back(static_cast<int>(i));
      fp.kernels.push_back(k);
      kernel_of[i] = static_cast<int>(fp.kernels.size()) - 1;
      fp.steps.push_back(Step{Step::Kind::Kernel, kernel_of[i]});
      open_row = options.fuse ? kernel_of[i] : -1;
      last_pointwise = -1;
      for (int r : reads)
        if (comps[r].kind == Kind::Reduction && kernel_of[r] >= 0)
          decide(r, static_cast<int>(i), false, "would recompute a reduction: it is in another kernel");
      continue;
    }
    // Horizontal fusion: an independent pointwise kernel over the same range.
    if (options.fuse && last_pointwise >= 0 && !depends_on_kernel(last_pointwise) &&
        sizes_key(comps[fp.kernels[last_pointwise].comps[0]].sizes) == sizes_key(c.sizes)) {
      fp.kernels[last_pointwise].comps.push_back(static_cast<int>(i));
      kernel_of[i] = last_pointwise;
      decide(fp.kernels[last_pointwise].comps[0], static_cast<int>(i), true, "same range, independent: horizontal fusion");
      continue;
    }
    FusedKernel k;
    k.kind = FusedKernel::Kind::Pointwise;
    k.comps.push_back(static_cast<int>(i));
    fp.kernels.push_back(k);
    kernel_of[i] = static_cast<int>(fp.kernels.size()) - 1;
    fp.steps.push_back(Step{Step::Kind::Kernel, kernel_of[i]});
    last_pointwise = kernel_of[i];
    for (int r : reads)
      if (comps[r].kind == Kind::Reduction)
        decide(r, static_cast<int>(i), false, "different iteration space: the reduction's rows do not match");
  }
  // Names and provenance: every computation inlined into a kernel contributes its IR nodes.
  for (size_t k = 0; k < fp.kernels.size(); ++k) {
    auto& kern = fp.kernels[k];
    std::set<int> seen;
    std::vector<int> order;
    std::function<void(int)> visit = [&](int c) {
      if (!seen.insert(c).second) return;
      for (int d : comps[c].deps)
        if (!fp.realized[d]) visit(d);
      order.push_back(c);
    };
    for (int c : kern.comps) visit(c);
    std::set<std::string> names;
    for (int c : order)
      for (const auto& p : comps[c].provenance)
        if (names.insert(p).second) kern.nodes.push_back(p);
    std::string tag = comps[kern.comps.back()].target;
    tag = tag.substr(tag.find("::") == std::string::npos ? 0 : tag.find("::") + 2);
    std::string safe;
    for (char ch : tag) safe += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
    kern.name = "k" + std::to_string(k) + "_" + (kern.kind == FusedKernel::Kind::Row ? "row_" : "") + safe;
  }
  return fp;
}

int view_source(const FusedProgram& p, int c) {
  const auto it = p.buffer_views.find(c);
  return it == p.buffer_views.end() ? -1 : it->second.source;
}

std::string fused_program_text(const FusedProgram& p) {
  std::ostringstream os;
  for (const auto& s : p.steps) {
    if (s.kind == Step::Kind::Extern) {
      const Comp& c = p.program.comps[s.index];
      for (int o : c.operands)
        if (const int src = view_source(p, o); src >= 0)
          os << "view " << p.program.comps[o].name << " = " << p.program.comps[src].name << "'s buffer, permuted\n";
      os << (c.kind == Kind::Fallback ? "fallback " : "extern ") << c.target << " -> " << c.name << "\n";
      continue;
    }
    const auto& k = p.kernels[s.index];
    os << "kernel " << k.name << (k.kind == FusedKernel::Kind::Row ? " rows " + sizes_key(k.outer) : "") << " computes";
    for (int c : k.comps) os << " " << p.program.comps[c].name;
    os << "\n  fuses:";
    for (const auto& nd : k.nodes) os << " " << nd;
    os << "\n";
  }
  return os.str();
}

std::string decisions_text(const FusedProgram& p) {
  std::ostringstream os;
  for (const auto& d : p.decisions)
    os << (d.fused ? "fused     " : "not fused ") << d.first << " -> " << d.second << ": " << d.reason << "\n";
  return os.str();
}

}  // namespace kiln::fusion
