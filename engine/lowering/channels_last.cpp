#include "engine/lowering/channels_last.h"

#include <algorithm>
#include <functional>
#include <set>

#include "engine/lowering/lowering_context.h"
#include "engine/lowering/program_edit.h"

namespace kiln::lowering {

namespace {

const std::vector<int> kNhwc = {0, 2, 3, 1};

bool same_sizes(const std::vector<Sym>& a, const std::vector<Sym>& b) {
  if (a.size() != b.size()) return false;
  for (size_t d = 0; d < a.size(); ++d)
    if (!same_size(a[d], b[d])) return false;
  return true;
}

// The load reads its target at the loop's own position (index i is var i).
bool own_position(const VExprNode& load) {
  for (size_t d = 0; d < load.index.size(); ++d) {
    const auto& ix = load.index[d];
    if (ix->op != IExprNode::Op::Var || ix->var != static_cast<int>(d)) return false;
  }
  return true;
}

// Pooling ops whose LibTorch kernels return their input's memory format.
bool keeps_memory_format(const std::string& target) {
  static const std::set<std::string> ops = {"aten::max_pool2d", "aten::avg_pool2d", "aten::adaptive_avg_pool2d",
                                            "aten::adaptive_max_pool2d", "aten::upsample_nearest2d",
                                            "aten::upsample_bilinear2d"};
  return ops.count(target) > 0;
}

// Whether body loads a computation stored NHWC.
bool reads_nhwc(const LoopProgram& p, const VExpr& body) {
  bool nhwc = false;
  std::function<void(const VExpr&)> find = [&](const VExpr& e) {
    if (!e || nhwc) return;
    if (e->op == VExprNode::Op::Load && p.comps[e->comp].layout == kNhwc) nhwc = true;
    find(e->a);
    find(e->b);
    find(e->c);
  };
  find(body);
  return nhwc;
}

// Where a load lands in memory: the computation it reads followed through views (each a load at moved indices) to one
// that is stored, and the index there in the load's own variables.
struct StoredRead {
  int comp = -1;
  std::vector<IExpr> index;
};

StoredRead through_views(const LoopProgram& p, const VExprNode& load) {
  StoredRead r{load.comp, load.index};
  for (int hops = 0; hops < 256; ++hops) {  // views of views: a chain the lowering made, never a cycle
    const Comp& src = p.comps[static_cast<size_t>(r.comp)];
    if (!src.is_view || !src.body || src.body->op != VExprNode::Op::Load) break;
    std::vector<IExpr> next;
    next.reserve(src.body->index.size());
    for (const auto& i : src.body->index) next.push_back(ie_subst(i, r.index));
    r = {src.body->comp, std::move(next)};
  }
  return r;
}

// The loop variable a load's innermost memory step follows (the variable the stored computation's innermost dim is
// indexed by), or -1 when that index is not one variable (a tap's shifted position, a broadcast's constant).
int innermost_var(const LoopProgram& p, const VExprNode& load) {
  const StoredRead r = through_views(p, load);
  const Comp& src = p.comps[static_cast<size_t>(r.comp)];
  if (src.kind == Comp::Kind::Constant || r.index.empty()) return -1;  // weights and per-channel vectors
  const std::vector<int> order = storage_order(src);
  if (order.empty() || static_cast<size_t>(order.back()) >= r.index.size()) return -1;
  const IExpr& ix = r.index[static_cast<size_t>(order.back())];
  return ix->op == IExprNode::Op::Var ? ix->var : -1;
}

// A [N, C, 1, 1] computation: either order is the same bytes.
bool one_pixel(const Comp& c) {
  auto one = [&](size_t d) { return capture::sym_is_const(c.sizes[d]) && c.sizes[d]->value == 1; };
  return c.sizes.size() == 4 && one(2) && one(3);
}

// A 4-d [N, C, H, W] computation's reads, counted by the variable their memory walks fastest: the channel (var 1:
// they read an NHWC buffer, or a row-major [N, H, W, C] one through a permute, as ConvNeXt's blocks and every
// LayerNorm2d do) against the width (var 3: a row-major NCHW buffer). Storing the computation channels-last where the
// channel wins makes its writes and those reads walk memory in the same order (contiguous on both sides), where
// row-major storage would make each warp's loads 32 channels apart (ConvNeXt-T's first-stage depthwise kernels,
// b8 on the H200: 0.50 ms each).
bool channel_reads_win(const LoopProgram& p, const VExpr& body) {
  int channel = 0, width = 0;
  std::function<void(const VExpr&)> walk = [&](const VExpr& e) {
    if (!e) return;
    if (e->op == VExprNode::Op::Load) {
      const int v = innermost_var(p, *e);
      channel += v == 1;
      width += v == 3;
    }
    walk(e->a);
    walk(e->b);
    walk(e->c);
  };
  walk(body);
  return channel > width;
}

}  // namespace

bool is_conv2d_target(const std::string& target) {
  return target == "aten::conv2d" || target == "aten::_convolution" || target == "aten::convolution";
}

namespace {

// Bytes of c's result when every size is a number; -1 otherwise.
int64_t constant_bytes(const Comp& c) {
  int64_t n = ir::dtype_size(c.dtype);
  for (const auto& s : c.sizes) {
    if (!capture::sym_is_const(s)) return -1;
    n *= s->value;
  }
  return n;
}

// The convolutions choose_channels_last gives the layout: 4-d, with computed or constant input and weight.
bool converted_conv(const Comp& comp) {
  return comp.kind == Comp::Kind::Extern && is_conv2d_target(comp.target) && comp.sizes.size() == 4 &&
         comp.operands.size() >= 2 && comp.operands[0] >= 0 && comp.operands[1] >= 0;
}

}  // namespace

int64_t conv_weight_copy_bytes(const LoopProgram& p) {
  std::set<int> weights;
  for (const auto& comp : p.comps)
    if (converted_conv(comp) && p.comps[comp.operands[1]].kind == Comp::Kind::Constant)
      weights.insert(comp.operands[1]);
  int64_t total = 0;
  for (int w : weights) {
    const int64_t b = constant_bytes(p.comps[w]);
    if (b < 0) return -1;
    total += b;
  }
  return total;
}

int64_t eager_activation_peak(const LoopProgram& p) {
  const size_t n = p.comps.size();
  auto counted = [&](const Comp& c) {
    return c.kind != Comp::Kind::Input && c.kind != Comp::Kind::Constant && !c.is_view;
  };
  // A view holds no memory: whoever reads it reads what it views (recursively).
  std::vector<int> last_use(n, -1);
  std::function<void(int, int)> read = [&](int c, int at) {
    if (c < 0 || static_cast<size_t>(c) >= n) return;
    last_use[static_cast<size_t>(c)] = std::max(last_use[static_cast<size_t>(c)], at);
    if (p.comps[static_cast<size_t>(c)].is_view)
      for (int d : p.comps[static_cast<size_t>(c)].deps) read(d, at);
  };
  for (size_t j = 0; j < n; ++j)
    for (int d : p.comps[j].deps) read(d, static_cast<int>(j));
  for (int o : p.outputs) read(o, static_cast<int>(n));
  std::vector<std::vector<int>> dies(n + 1);
  std::vector<int64_t> bytes(n, 0);
  for (size_t c = 0; c < n; ++c) {
    if (!counted(p.comps[c])) continue;
    bytes[c] = constant_bytes(p.comps[c]);
    if (bytes[c] < 0) return -1;
    // Never read: freed right after it is made.
    dies[static_cast<size_t>(std::max(last_use[c], static_cast<int>(c)))].push_back(static_cast<int>(c));
  }
  int64_t live = 0, peak = 0;
  for (size_t j = 0; j < n; ++j) {
    live += bytes[j];
    peak = std::max(peak, live);
    for (int c : dies[j]) live -= bytes[static_cast<size_t>(c)];
  }
  return peak;
}

int choose_channels_last(LoopProgram& p, bool weight_copies) {
  std::set<int> outputs(p.outputs.begin(), p.outputs.end());
  int changed = 0;
  auto set_nhwc = [&](int c) {
    Comp& comp = p.comps[c];
    if (comp.sizes.size() != 4 || outputs.count(c) || comp.layout == kNhwc) return;
    comp.layout = kNhwc;
    ++changed;
  };
  // Convolutions, their weights and the inputs computed for them.
  for (size_t c = 0; c < p.comps.size(); ++c) {
    const Comp& comp = p.comps[c];
    if (!converted_conv(comp)) continue;
    set_nhwc(static_cast<int>(c));
    const Comp& weight = p.comps[comp.operands[1]];
    if (weight.kind == Comp::Kind::Constant && weight_copies) set_nhwc(comp.operands[1]);
    if (p.comps[comp.operands[0]].kind == Comp::Kind::Pointwise) set_nhwc(comp.operands[0]);
  }
  if (changed == 0) return 0;
  // Followers, in topological order so chains carry the layout forward.
  for (size_t c = 0; c < p.comps.size(); ++c) {
    Comp& comp = p.comps[c];
    if (comp.sizes.size() != 4 || !comp.layout.empty()) continue;
    if (comp.kind == Comp::Kind::Fallback && keeps_memory_format(comp.target) && !comp.operands.empty() &&
        comp.operands[0] >= 0 && p.comps[comp.operands[0]].layout == kNhwc) {
      set_nhwc(static_cast<int>(c));
      continue;
    }
    if ((comp.kind == Comp::Kind::Reduction || comp.kind == Comp::Kind::Pointwise) && comp.target == "aten::max_pool2d") {
      // Pooling windows of an NHWC input (a reduction over each window, or its taps written out,
      // LowerOptions::pool_windows): the pooled tensor keeps the layout (and feeds the next conv).
      if (reads_nhwc(p, comp.body)) set_nhwc(static_cast<int>(c));
      continue;
    }
    if (comp.kind != Comp::Kind::Pointwise) continue;
    // A depthwise convolution lowered as arithmetic (LowerOptions::depthwise) reads its input around each position,
    // not at it: it keeps the layout of an NHWC input, so neighbouring threads read neighbouring channels.
    if (is_conv2d_target(comp.target) && (reads_nhwc(p, comp.body) || channel_reads_win(p, comp.body))) {
      set_nhwc(static_cast<int>(c));
      continue;
    }
    bool follows = false;
    std::function<void(const VExpr&)> walk = [&](const VExpr& e) {
      if (!e || follows) return;
      if (e->op == VExprNode::Op::Load) {
        const Comp& src = p.comps[e->comp];
        follows = src.layout == kNhwc && same_sizes(src.sizes, comp.sizes) && own_position(*e);
      }
      walk(e->a);
      walk(e->b);
      walk(e->c);
    };
    walk(comp.body);
    if (follows || (!comp.is_view && !one_pixel(comp) && channel_reads_win(p, comp.body))) set_nhwc(static_cast<int>(c));
  }
  // A channels-last depthwise window (whether it took the layout from its input or, read by a convolution, as
  // that convolution's input) reads its filters [C, 1, KH, KW] (a constant) with the channel varying fastest
  // across threads: stored [KH, KW, 1, C] (converted once, as convolutions' NHWC weights are), each tap's loads
  // are neighbours instead of KH*KW floats apart (uncoalesced, they made the kernel 5-10x slower than cuDNN's).
  for (const Comp& comp : p.comps) {
    if (comp.kind != Comp::Kind::Pointwise || !is_conv2d_target(comp.target) || comp.layout != kNhwc) continue;
    std::function<void(const VExpr&)> filters = [&](const VExpr& e) {
      if (!e) return;
      if (e->op == VExprNode::Op::Load && e->index.size() == 4 && e->index[0]->op == IExprNode::Op::Var &&
          e->index[0]->var == 1) {
        Comp& w = p.comps[e->comp];
        if (w.kind == Comp::Kind::Constant && w.sizes.size() == 4 && w.layout.empty()) {
          w.layout = {2, 3, 1, 0};
          ++changed;
        }
      }
      filters(e->a);
      filters(e->b);
      filters(e->c);
    };
    filters(comp.body);
  }
  return changed;
}

int copy_conv_weights_per_call(LoweredRegion& region) {
  auto& comps = region.program.comps;
  // Per constant weight to copy, the first channels-last convolution reading it.
  std::map<int, int> first_reader;
  for (size_t c = 0; c < comps.size(); ++c) {
    const Comp& conv = comps[c];
    if (!converted_conv(conv) || conv.layout != kNhwc) continue;
    const int w = conv.operands[1];
    const Comp& weight = comps[static_cast<size_t>(w)];
    if (weight.kind != Comp::Kind::Constant || weight.sizes.size() != 4 || !weight.layout.empty()) continue;
    // The same order either way when the channels or the whole window are one long: nothing to move.
    auto one = [&](int d) { return capture::sym_is_const(weight.sizes[d]) && weight.sizes[d]->value == 1; };
    if (one(1) || (one(2) && one(3))) continue;
    first_reader.emplace(w, static_cast<int>(c));
  }
  // From the last insertion point back: an insertion moves only what lies after it, copies made already included.
  std::vector<std::pair<int, int>> order;
  for (const auto& [w, at] : first_reader) order.push_back({at, w});
  std::sort(order.rbegin(), order.rend());
  for (const auto& [at, w] : order) {
    const Comp& weight = comps[static_cast<size_t>(w)];
    Comp copy;
    copy.kind = Comp::Kind::Pointwise;
    copy.name = weight.name + "_channels_last";
    copy.target = "aten::contiguous";
    copy.sizes = weight.sizes;
    copy.layout = kNhwc;
    copy.dtype = weight.dtype;
    copy.body = ve_load(w, {ie_var(0), ie_var(1), ie_var(2), ie_var(3)});
    copy.deps = {w};
    copy.provenance = comps[static_cast<size_t>(at)].provenance;
    insert_comp(region, at, std::move(copy));
    for (size_t c = static_cast<size_t>(at) + 1; c < comps.size(); ++c) {
      Comp& conv = comps[c];
      if (!converted_conv(conv) || conv.operands[1] != w) continue;
      conv.operands[1] = at;
      for (int& d : conv.deps)
        if (d == w) d = at;
    }
  }
  return static_cast<int>(order.size());
}

}  // namespace kiln::lowering
