#include "engine/lowering/attention.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "engine/lowering/lowering_context.h"

namespace kiln::lowering {

namespace {

void refs_of(const ir::Arg& a, std::vector<std::string>& out) {
  if (a.kind == ir::Arg::Kind::Ref) out.push_back(a.ref);
  for (const auto& item : a.items) refs_of(item, out);
}

void refs_in_block(const ir::Block& b, std::vector<std::string>& out) {
  for (const auto& n : b.nodes) {
    for (const auto& a : n.args) refs_of(a, out);
    for (const auto& [k, a] : n.kwargs) refs_of(a, out);
    for (const auto& inner : n.blocks) refs_in_block(inner, out);
  }
  for (const auto& a : b.returns) refs_of(a, out);
}

// Which node defines each value and which nodes read it (the output node included; a node reading a
// value twice counts once).
struct Uses {
  std::map<std::string, int> def;
  std::map<std::string, std::vector<int>> readers;
};

Uses uses_of(const ir::Graph& g) {
  Uses u;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& n = g.nodes[i];
    for (const auto& o : n.outputs) u.def[o.name] = static_cast<int>(i);
    std::vector<std::string> read;
    for (const auto& a : n.args) refs_of(a, read);
    for (const auto& [k, a] : n.kwargs) refs_of(a, read);
    for (const auto& b : n.blocks) refs_in_block(b, read);
    std::sort(read.begin(), read.end());
    read.erase(std::unique(read.begin(), read.end()), read.end());
    for (const auto& r : read) u.readers[r].push_back(static_cast<int>(i));
  }
  return u;
}

struct Matcher {
  const ir::Graph& g;
  Uses u;
  bool float32;  // float32 chains match too

  // The call node defining a value (null for placeholders, attributes and unknown names).
  const ir::Node* def(const std::string& value, int* index = nullptr) const {
    auto it = u.def.find(value);
    if (it == u.def.end()) return nullptr;
    const ir::Node& n = g.nodes[static_cast<size_t>(it->second)];
    if (n.op != ir::NodeOp::CallFunction || n.outputs.size() != 1) return nullptr;
    if (index) *index = it->second;
    return &n;
  }
  // Whether `value`'s only reader is node `reader`.
  bool only_read_by(const std::string& value, int reader) const {
    auto it = u.readers.find(value);
    return it != u.readers.end() && it->second.size() == 1 && it->second[0] == reader;
  }
  static bool ref(const ir::Node& n, size_t i) { return i < n.args.size() && n.args[i].kind == ir::Arg::Kind::Ref; }
  static bool number(const ir::Arg& a, double& v) {
    if (a.kind == ir::Arg::Kind::Int) v = static_cast<double>(a.i);
    else if (a.kind == ir::Arg::Kind::Float) v = a.f;
    else return false;
    return true;
  }
  static bool int_lit(const ir::Node& n, size_t i, int64_t& v) {
    if (i >= n.args.size() || n.args[i].kind != ir::Arg::Kind::Int) return false;
    v = n.args[i].i;
    return true;
  }
  const ir::ValueMeta* meta(const std::string& v) const { return g.meta_of(v); }
  static int64_t norm_dim(int64_t d, int64_t rank) { return d < 0 ? d + rank : d; }

  // q, k or v read from a 3-d x it splits into heads: transpose(view(x, [B, T, H, E]), 1, 2).
  // Sets x, H and the two view nodes (candidates for `dead`).
  bool head_split(const std::string& value, std::string& x, int64_t& heads, std::vector<int>& views) const {
    int ti = -1, vi = -1;
    const ir::Node* t = def(value, &ti);
    if (!t || !ref(*t, 0)) return false;
    int64_t a = 0, b = 0;
    bool swaps_1_2 = false;
    if (t->target == "aten::transpose" && int_lit(*t, 1, a) && int_lit(*t, 2, b))
      swaps_1_2 = std::min(norm_dim(a, 4), norm_dim(b, 4)) == 1 && std::max(norm_dim(a, 4), norm_dim(b, 4)) == 2;
    if (t->target == "aten::permute" && t->args.size() == 2 && t->args[1].kind == ir::Arg::Kind::List) {
      std::vector<int64_t> p;
      for (const auto& item : t->args[1].items)
        if (item.kind == ir::Arg::Kind::Int) p.push_back(norm_dim(item.i, 4));
      swaps_1_2 = p == std::vector<int64_t>{0, 2, 1, 3};
    }
    if (!swaps_1_2) return false;
    const ir::Node* v = def(t->args[0].ref, &vi);
    if (!v || (v->target != "aten::view" && v->target != "aten::reshape") || !ref(*v, 0)) return false;
    const ir::ValueMeta* xm = meta(v->args[0].ref);
    const ir::ValueMeta& vm = v->outputs[0].meta;
    if (!xm || !xm->is_tensor() || xm->shape.size() != 3 || vm.shape.size() != 4) return false;
    const auto& xs = xm->shape;
    const auto& vs = vm.shape;
    if (!(xs[0] == vs[0]) || !(xs[1] == vs[1]) || vs[2].is_symbolic() || vs[3].is_symbolic() || xs[2].is_symbolic() ||
        vs[2].value * vs[3].value != xs[2].value || vs[2].value <= 0)
      return false;
    x = v->args[0].ref;
    heads = vs[2].value;
    views = {ti, vi};
    return true;
  }

  // cat((e..., x, e...), d) whose other operands are all empty (a zero size: the [0] tensor a key/value cache
  // starts from, or no rows along d), of x's dtype and shape: x itself. Sets x and the cat and list nodes
  // (candidates for `dead`).
  bool lone_cat_operand(const std::string& value, std::string& x, std::vector<int>& nodes) const {
    int ci = -1, li = -1;
    const ir::Node* c = def(value, &ci);
    if (!c || c->target != "aten::cat" || c->args.empty()) return false;
    const std::vector<ir::Arg>* items = nullptr;
    if (c->args[0].kind == ir::Arg::Kind::List) {
      items = &c->args[0].items;
    } else if (ref(*c, 0)) {
      const ir::Node* l = def(c->args[0].ref, &li);
      if (!l || l->target != "prim::ListConstruct" || !only_read_by(c->args[0].ref, ci)) return false;
      items = &l->args;
    }
    if (!items) return false;
    std::string only;
    for (const auto& a : *items) {
      const ir::ValueMeta* am = a.kind == ir::Arg::Kind::Ref ? meta(a.ref) : nullptr;
      if (!am || !am->is_tensor()) return false;
      const bool empty = std::any_of(am->shape.begin(), am->shape.end(),
                                     [](const ir::Dim& d) { return !d.is_symbolic() && d.value == 0; });
      if (empty) continue;
      if (!only.empty()) return false;
      only = a.ref;
    }
    const ir::ValueMeta* om = only.empty() ? nullptr : meta(only);
    const ir::ValueMeta& cm = c->outputs[0].meta;
    if (!om || om->dtype != cm.dtype || om->device != cm.device || om->shape.size() != cm.shape.size()) return false;
    for (size_t d = 0; d < cm.shape.size(); ++d)
      if (!(om->shape[d] == cm.shape[d])) return false;
    x = only;
    nodes = {ci};
    if (li >= 0) nodes.push_back(li);
    return true;
  }

  // x is piece k of split(y3, n, -1) or split_with_sizes(y3, [n...], -1) (unpacked), y3 [B, T, W]: sets y (y3, or
  // the [B·T, W] value y3 views), the piece's offset along W, and the nodes read through (candidates for `dead`).
  bool split_piece(const std::string& x, std::string& y, int64_t& offset, std::vector<int>& nodes) const {
    auto at = u.def.find(x);
    if (at == u.def.end()) return false;
    const int li = at->second;
    const ir::Node& lu = g.nodes[static_cast<size_t>(li)];
    if (lu.target != "prim::ListUnpack" || !ref(lu, 0)) return false;
    size_t k = 0;
    while (k < lu.outputs.size() && lu.outputs[k].name != x) ++k;
    int si = -1;
    const ir::Node* sp = def(lu.args[0].ref, &si);
    if (!sp || !ref(*sp, 0) || !only_read_by(lu.args[0].ref, li) || sp->args.size() != 3) return false;
    const ir::ValueMeta* ym = meta(sp->args[0].ref);
    const ir::ValueMeta* xm = meta(x);
    int64_t dim = 0;
    if (!ym || !xm || ym->shape.size() != 3 || !int_lit(*sp, 2, dim) || norm_dim(dim, 3) != 2 ||
        ym->shape[2].is_symbolic() || xm->shape[2].is_symbolic())
      return false;
    std::vector<int64_t> sizes;
    if (sp->target == "aten::split" && sp->args[1].kind == ir::Arg::Kind::Int) {
      sizes = split_lengths(ym->shape[2].value, sp->args[1].i);
    } else if ((sp->target == "aten::split" || sp->target == "aten::split_with_sizes") &&
               sp->args[1].kind == ir::Arg::Kind::List) {
      for (const auto& item : sp->args[1].items)
        if (item.kind == ir::Arg::Kind::Int) sizes.push_back(item.i);
        else return false;
    } else {
      return false;
    }
    // A split as torch makes it (sizes not negative, covering y's last dim exactly), one piece per output, x's own.
    int64_t total = 0;
    for (int64_t n : sizes) total += n;
    if (std::any_of(sizes.begin(), sizes.end(), [](int64_t n) { return n < 0; }) || total != ym->shape[2].value ||
        sizes.size() != lu.outputs.size() || k >= sizes.size() || sizes[k] != xm->shape[2].value)
      return false;
    offset = 0;
    for (size_t j = 0; j < k; ++j) offset += sizes[j];
    y = sp->args[0].ref;
    nodes = {si, li};
    // y3 a view of the projection's [B·T, W] product: read the product (B a number: the runtime views it back).
    int vi = -1;
    const ir::Node* v = def(y, &vi);
    const ir::ValueMeta* pm = v && ref(*v, 0) ? meta(v->args[0].ref) : nullptr;
    if (v && (v->target == "aten::view" || v->target == "aten::reshape") && pm && pm->is_tensor() &&
        pm->shape.size() == 2 && pm->shape[1] == ym->shape[2] && !ym->shape[0].is_symbolic()) {
      y = v->args[0].ref;
      nodes.push_back(vi);
    }
    return true;
  }

  // The chain ending at node `oi` (a matmul), or false.
  bool match(int oi, AttentionMatch& m, std::vector<int>& chain, std::vector<int>& views) const {
    const ir::Node& o = g.nodes[static_cast<size_t>(oi)];
    if (o.target != "aten::matmul" || o.args.size() != 2 || !ref(o, 0) || !ref(o, 1) || o.outputs.size() != 1) return false;
    std::string p = o.args[0].ref, v = o.args[1].ref;
    std::vector<int> nodes;  // the chain, last first
    int at = oi, pi = -1;
    const ir::Node* pn = def(p, &pi);
    // Steps that change nothing after the softmax: dropout in inference, a cast to the dtype it already has
    // (GPT-2's attn_weights.type(value.dtype)).
    auto identity = [&](const ir::Node& n) {
      if (!ref(n, 0)) return false;
      if (n.target == "aten::dropout")
        return n.args.size() == 3 && n.args[2].kind == ir::Arg::Kind::Bool && !n.args[2].b;
      if (n.target != "aten::to" || n.args.size() < 2) return false;
      const ir::ValueMeta* in = meta(n.args[0].ref);
      const bool copy = n.args.size() > 3 && n.args[3].kind == ir::Arg::Kind::Bool && n.args[3].b;
      return in && in->is_tensor() && in->dtype == n.outputs[0].meta.dtype && in->device == n.outputs[0].meta.device &&
             !copy;
    };
    while (pn && identity(*pn) && only_read_by(p, at)) {
      nodes.push_back(pi);
      at = pi;
      p = pn->args[0].ref;
      pn = def(p, &pi);
    }
    if (!pn || !only_read_by(p, at) || !ref(*pn, 0)) return false;
    int64_t dim = 0;
    const bool softmax = (pn->target == "aten::softmax" && (pn->args.size() == 2 || (pn->args.size() == 3 &&
                                                                                     pn->args[2].kind == ir::Arg::Kind::None))) ||
                         (pn->target == "aten::_softmax" && pn->args.size() == 3 &&
                          pn->args[2].kind == ir::Arg::Kind::Bool && !pn->args[2].b);
    if (!softmax || !int_lit(*pn, 1, dim) || norm_dim(dim, 4) != 3) return false;
    nodes.push_back(pi);
    at = pi;
    std::string s = pn->args[0].ref;
    int si = -1;
    const ir::Node* sn = def(s, &si);
    if (!sn || !only_read_by(s, at)) return false;
    // The mask: add(scores, mask[, 1]) with the scores on either side.
    if (sn->target == "aten::add" && (sn->args.size() == 2 || sn->args.size() == 3) && ref(*sn, 0) && ref(*sn, 1)) {
      double alpha = 1;
      if (sn->args.size() == 3 && (!number(sn->args[2], alpha) || alpha != 1)) return false;
      auto scores_side = [&](const std::string& val) {
        const ir::Node* d = def(val);
        return d && (d->target == "aten::matmul" || d->target == "aten::mul" || d->target == "aten::div");
      };
      const bool first = scores_side(sn->args[0].ref);
      if (!first && !scores_side(sn->args[1].ref)) return false;
      m.mask = sn->args[first ? 1 : 0].ref;
      nodes.push_back(si);
      at = si;
      s = sn->args[first ? 0 : 1].ref;
      sn = def(s, &si);
      if (!sn || !only_read_by(s, at)) return false;
    }
    if (sn->target == "aten::mul" || sn->target == "aten::div") {
      if (sn->args.size() != 2) return false;
      // The scores are the tensor; the scale a number literal or a scalar value (a size's square root).
      auto tensor = [&](size_t i) {
        const ir::ValueMeta* tm = ref(*sn, i) ? meta(sn->args[i].ref) : nullptr;
        return tm && tm->is_tensor();
      };
      auto scale = [&](size_t i) {
        double c = 0;
        if (number(sn->args[i], c)) {
          if (c == 0) return false;
          m.scale = sn->target == "aten::div" ? 1.0 / c : c;
          return true;
        }
        const ir::ValueMeta* cm = ref(*sn, i) ? meta(sn->args[i].ref) : nullptr;
        if (!cm || (cm->kind != ir::ValueMeta::Kind::Float && cm->kind != ir::ValueMeta::Kind::Int)) return false;
        m.scale_value = sn->args[i].ref;
        m.divide = sn->target == "aten::div";
        return true;
      };
      const bool lhs = tensor(0) && scale(1);
      const bool rhs = !lhs && sn->target == "aten::mul" && tensor(1) && scale(0);
      if (!lhs && !rhs) return false;
      nodes.push_back(si);
      at = si;
      s = sn->args[lhs ? 0 : 1].ref;
      sn = def(s, &si);
      if (!sn || !only_read_by(s, at)) return false;
    }
    if (sn->target != "aten::matmul" || sn->args.size() != 2 || !ref(*sn, 0) || !ref(*sn, 1)) return false;
    nodes.push_back(si);
    at = si;
    const std::string q = sn->args[0].ref, kt = sn->args[1].ref;
    int ti = -1;
    const ir::Node* tn = def(kt, &ti);
    int64_t a = 0, b = 0;
    if (!tn || tn->target != "aten::transpose" || !only_read_by(kt, at) || !ref(*tn, 0) || !int_lit(*tn, 1, a) ||
        !int_lit(*tn, 2, b) || std::min(norm_dim(a, 4), norm_dim(b, 4)) != 2 || std::max(norm_dim(a, 4), norm_dim(b, 4)) != 3)
      return false;
    nodes.push_back(ti);
    const std::string k = tn->args[0].ref;
    // Shapes and dtypes: q [B, H, L, E], k [B, H, S, E], v [B, H, S, Ev], one floating dtype throughout.
    const ir::ValueMeta *qm = meta(q), *km = meta(k), *vm = meta(v);
    const ir::ValueMeta& om = o.outputs[0].meta;
    if (!qm || !km || !vm || !qm->is_tensor() || !km->is_tensor() || !vm->is_tensor()) return false;
    if (qm->shape.size() != 4 || km->shape.size() != 4 || vm->shape.size() != 4 || om.shape.size() != 4) return false;
    const ir::DType dt = qm->dtype;
    if (((dt != ir::DType::Float32 || !float32) && dt != ir::DType::Float16 && dt != ir::DType::BFloat16) || km->dtype != dt ||
        vm->dtype != dt || om.dtype != dt)
      return false;
    const auto &qs = qm->shape, &ks = km->shape, &vs = vm->shape;
    if (!(qs[0] == ks[0] && qs[0] == vs[0] && qs[1] == ks[1] && qs[1] == vs[1] && qs[3] == ks[3] && ks[2] == vs[2]))
      return false;
    if (!m.mask.empty()) {
      const ir::ValueMeta* mm = meta(m.mask);
      if (!mm || !mm->is_tensor() || mm->dtype != dt || mm->shape.size() > 4) return false;
      // It broadcasts to the scores [B, H, L, S] (and not the scores to it).
      const std::vector<ir::Dim> scores = {qs[0], qs[1], qs[2], ks[2]};
      for (size_t d = 0; d < mm->shape.size(); ++d) {
        const ir::Dim& md = mm->shape[mm->shape.size() - 1 - d];
        if (!(md == ir::Dim::concrete(1)) && !(md == scores[3 - d])) return false;
      }
    }
    m.qkv = {q, k, v};
    for (size_t i = 0; i < 3; ++i) {
      // GPT-2's keys and values come through the cache's cat with an empty tensor: read what went in.
      std::string x, inner;
      std::vector<int> through;
      if (lone_cat_operand(m.qkv[i], inner, through)) {
        m.qkv[i] = inner;
        views.insert(views.end(), through.begin(), through.end());
      }
      int64_t heads = 0;
      std::vector<int> split;
      if (head_split(m.qkv[i], x, heads, split)) {
        m.qkv[i] = x;
        m.heads[i] = heads;
        views.insert(views.end(), split.begin(), split.end());
        // GPT-2's q, k and v are pieces of one projection: read them from it.
        std::string y;
        int64_t offset = 0;
        std::vector<int> pieces;
        if (split_piece(x, y, offset, pieces)) {
          m.widths[i] = meta(x)->shape[2].value;
          m.offsets[i] = offset;
          m.qkv[i] = y;
          views.insert(views.end(), pieces.begin(), pieces.end());
        }
      }
    }
    std::reverse(nodes.begin(), nodes.end());
    chain = nodes;
    for (int n : nodes) m.chain.push_back(g.nodes[static_cast<size_t>(n)].name());
    // The call reads q, k, v and the mask; none of them may be a value of the chain it replaces (softmax(s + s)
    // or matmul(p, p) read a step twice from one node, which `only_read_by` counts once).
    for (const auto* read : {&m.qkv[0], &m.qkv[1], &m.qkv[2], &m.mask})
      if (std::find(m.chain.begin(), m.chain.end(), *read) != m.chain.end()) return false;
    m.chain.push_back(o.name());
    return true;
  }
};

}  // namespace

AttentionPlan find_attention(const ir::Graph& g, const std::set<int>& excluded, bool float32) {
  Matcher mt{g, uses_of(g), float32};
  AttentionPlan plan;
  std::vector<int> views;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    AttentionMatch m;
    std::vector<int> chain, split;
    if (g.nodes[i].op != ir::NodeOp::CallFunction || excluded.count(static_cast<int>(i)) ||
        !mt.match(static_cast<int>(i), m, chain, split))
      continue;
    plan.dead.insert(chain.begin(), chain.end());
    views.insert(views.end(), split.begin(), split.end());
    plan.at[static_cast<int>(i)] = std::move(m);
  }
  // Head-splitting views whose every reader is dead are dead too (the transpose first, then its view), unless a
  // call reads one as an operand itself (another chain's mask).
  std::set<std::string> operands;
  for (const auto& [node, m] : plan.at) {
    operands.insert(m.qkv.begin(), m.qkv.end());
    operands.insert(m.mask);
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (int vi : views) {
      const ir::Node& vn = g.nodes[static_cast<size_t>(vi)];
      if (plan.dead.count(vi)) continue;
      // Every output (a split's unpacking has one per piece) read by dead nodes or calls only, none an operand; an
      // attention call reads x in place of the view: its node counts as a dead reader.
      bool all_dead = !vn.outputs.empty();
      for (const auto& out : vn.outputs) {
        const auto it = mt.u.readers.find(out.name);
        all_dead = all_dead && !operands.count(out.name) &&
                   (it == mt.u.readers.end() ||
                    std::all_of(it->second.begin(), it->second.end(),
                                [&](int r) { return plan.dead.count(r) > 0 || plan.at.count(r) > 0; }));
      }
      if (all_dead) changed = plan.dead.insert(vi).second || changed;
    }
  }
  return plan;
}

std::string attention_note(const AttentionMatch& m) {
  std::ostringstream os;
  os << "# attention: " << m.chain.back() << " := softmax(q @ k^T * " << m.scale << (m.mask.empty() ? "" : " + " + m.mask)
     << ") @ v in one scaled_dot_product_attention call (" << kAttentionTarget << "), in place of";
  for (size_t i = 0; i + 1 < m.chain.size(); ++i) os << " " << m.chain[i];
  os << ";";
  static const char* const kRole[] = {"q", "k", "v"};
  for (size_t i = 0; i < 3; ++i) {
    os << " " << kRole[i] << " " << m.qkv[i];
    if (m.widths[i] > 0) os << " columns " << m.offsets[i] << "+" << m.widths[i];
    if (m.heads[i] > 0) os << " (" << m.heads[i] << " heads, read in place)";
  }
  return os.str();
}

// The chain as one extern at its last product's node, stored as scaled_dot_product_attention writes it: heads
// inside rows ([B, L, H, E] in memory, the order its fused kernels write and the order the transpose after
// attention wants), dims still [B, H, L, E].
void lower_attention(LoweringContext& cx, const AttentionMatch& m) {
  const ir::Node& n = *cx.node;
  double scale = m.scale;
  if (!m.scale_value.empty()) {
    Val v = cx.value(ir::Arg::value(m.scale_value));
    double c = 0;
    if (v.kind == Val::Kind::Float) c = v.f;
    else if (v.kind == Val::Kind::Int && capture::sym_is_const(v.i)) c = static_cast<double>(v.i->value);
    if (c == 0 || !std::isfinite(c)) throw AttentionDeclined{cx.node_index};
    scale = m.divide ? 1.0 / c : c;
  }
  Comp c;
  c.kind = Comp::Kind::Extern;
  for (const auto& d : n.outputs[0].meta.shape)
    c.sizes.push_back(d.is_symbolic() ? capture::sym_var(d.symbol) : capture::sym_const(d.value));
  c.dtype = n.outputs[0].meta.dtype;
  c.ir_node = cx.node_index;
  c.target = kAttentionTarget;
  c.name = n.name();
  std::vector<std::string> read(m.qkv.begin(), m.qkv.end());
  read.push_back(m.mask);
  for (const auto& name : read) {
    if (name.empty()) {
      c.operands.push_back(-1);
      continue;
    }
    Val v = cx.value(ir::Arg::value(name));
    if (v.kind != Val::Kind::Tensor) throw LoweringError("attention at " + n.name() + ": %" + name + " is not a tensor");
    c.operands.push_back(v.comp);
    c.deps.push_back(v.comp);
  }
  std::sort(c.deps.begin(), c.deps.end());
  c.deps.erase(std::unique(c.deps.begin(), c.deps.end()), c.deps.end());
  c.attn_scale = scale;
  c.attn_heads = m.heads;
  c.attn_offsets = m.offsets;
  c.attn_widths = m.widths;
  c.layout = {0, 2, 1, 3};
  c.provenance.assign(m.chain.begin(), m.chain.end() - 1);  // add() appends the last product's own name
  cx.set_output(tensor_val(cx.add(std::move(c))));
  AttentionMatch resolved = m;
  resolved.scale = scale;
  cx.out.notes.push_back(attention_note(resolved));
}

}  // namespace kiln::lowering
