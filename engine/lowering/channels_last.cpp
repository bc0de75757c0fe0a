#include "engine/lowering/channels_last.h"

#include <functional>
#include <set>

#include "engine/lowering/lowering_context.h"

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

}  // namespace

bool is_conv2d_target(const std::string& target) {
  return target == "aten::conv2d" || target == "aten::_convolution" || target == "aten::convolution";
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
    Comp& comp = p.comps[c];
    if (comp.kind != Comp::Kind::Extern || !is_conv2d_target(comp.target) || comp.sizes.size() != 4) continue;
    if (comp.operands.size() < 2 || comp.operands[0] < 0 || comp.operands[1] < 0) continue;
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
    if (comp.kind == Comp::Kind::Reduction && comp.target == "aten::max_pool2d") {
      // Pooling windows of an NHWC input: the pooled tensor keeps the layout (and feeds the next conv).
      bool nhwc_input = false;
      std::function<void(const VExpr&)> find = [&](const VExpr& e) {
        if (!e) return;
        if (e->op == VExprNode::Op::Load && p.comps[e->comp].layout == kNhwc) nhwc_input = true;
        find(e->a);
        find(e->b);
        find(e->c);
      };
      find(comp.body);
      if (nhwc_input) set_nhwc(static_cast<int>(c));
      continue;
    }
    if (comp.kind != Comp::Kind::Pointwise) continue;
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
    if (follows) set_nhwc(static_cast<int>(c));
  }
  return changed;
}

}  // namespace kiln::lowering
