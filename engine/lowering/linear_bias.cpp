#include "engine/lowering/linear_bias.h"

#include <algorithm>
#include <set>
#include <vector>

#include "engine/lowering/lowering_context.h"

namespace kiln::lowering {

namespace {

// Whether every load of `comp` in e indexes all `rank` dimensions (then the bias's index is known).
bool loads_full_rank(const VExpr& e, int comp, size_t rank) {
  if (!e) return true;
  if (e->op == VExprNode::Op::Load && e->comp == comp && e->index.size() != rank) return false;
  return loads_full_rank(e->a, comp, rank) && loads_full_rank(e->b, comp, rank) && loads_full_rank(e->c, comp, rank);
}

// e with every load of `linear` replaced by load + bias[that load's index in dimension `dim`].
VExpr add_bias_at_loads(const VExpr& e, int linear, int bias, size_t dim) {
  if (!e) return e;
  if (e->op == VExprNode::Op::Load) {
    if (e->comp != linear || e->index.size() <= dim) return e;
    return ve_binary("add", e, ve_load(bias, {e->index[dim]}));
  }
  VExpr a = add_bias_at_loads(e->a, linear, bias, dim);
  VExpr b = add_bias_at_loads(e->b, linear, bias, dim);
  VExpr c = add_bias_at_loads(e->c, linear, bias, dim);
  if (a == e->a && b == e->b && c == e->c) return e;
  auto copy = std::make_shared<VExprNode>(*e);
  copy->a = std::move(a);
  copy->b = std::move(b);
  copy->c = std::move(c);
  return copy;
}

// For every computation, the later ones that read it (its deps, its operands or a load in its body),
// in program order: one walk of the program, not one per linear. Moving a bias only adds loads of the
// bias, so the readers of every linear's output stay as computed here.
std::vector<std::vector<size_t>> readers_of(const LoopProgram& p) {
  std::vector<std::vector<size_t>> readers(p.comps.size());
  for (size_t r = 0; r < p.comps.size(); ++r) {
    const Comp& reader = p.comps[r];
    std::set<int> read(reader.deps.begin(), reader.deps.end());
    read.insert(reader.operands.begin(), reader.operands.end());
    collect_loads(reader.body, read);
    for (int c : read)
      if (c >= 0 && static_cast<size_t>(c) < r) readers[static_cast<size_t>(c)].push_back(r);
  }
  return readers;
}

}  // namespace

int move_linear_bias_to_readers(LoopProgram& p) {
  const std::set<int> outputs(p.outputs.begin(), p.outputs.end());
  const std::vector<std::vector<size_t>> all_readers = readers_of(p);
  int changed = 0;
  for (size_t i = 0; i < p.comps.size(); ++i) {
    const int c = static_cast<int>(i);
    const Comp& linear = p.comps[i];
    if (linear.kind != Comp::Kind::Extern || linear.bias_operand < 0 || linear.drop_bias) continue;
    const size_t at = static_cast<size_t>(linear.bias_operand);
    if (linear.operands.size() <= at || linear.operands[at] < 0 || outputs.count(c) || linear.sizes.empty()) continue;
    const int bias = linear.operands[at];
    const Comp& b = p.comps[static_cast<size_t>(bias)];
    // The bias runs along the features (a product's last dimension) or a convolution's channels.
    const bool conv = linear.target == "aten::conv2d";
    if (conv && linear.sizes.size() != 4) continue;
    const size_t dim = conv ? 1 : linear.sizes.size() - 1;
    if (b.sizes.size() != 1 || !same_size(b.sizes[0], linear.sizes[dim]) || b.dtype != linear.dtype) continue;
    const std::vector<size_t>& readers = all_readers[i];
    bool only_pointwise = true;
    for (size_t r : readers) {
      const Comp& reader = p.comps[r];
      // Views included: a view is a pointwise copy too, computed by a kernel wherever it is realized
      // (an extern reading it gets that copy, bias added), inlined into its readers elsewhere.
      only_pointwise = only_pointwise && (reader.kind == Comp::Kind::Pointwise || reader.kind == Comp::Kind::Reduction) &&
                       loads_full_rank(reader.body, c, linear.sizes.size());
    }
    if (!only_pointwise || readers.empty()) continue;
    for (size_t r : readers) {
      Comp& reader = p.comps[r];
      reader.body = add_bias_at_loads(reader.body, c, bias, dim);
      if (std::find(reader.deps.begin(), reader.deps.end(), bias) == reader.deps.end()) {
        reader.deps.push_back(bias);
        std::sort(reader.deps.begin(), reader.deps.end());
      }
    }
    p.comps[i].drop_bias = true;
    ++changed;
  }
  return changed;
}

}  // namespace kiln::lowering
