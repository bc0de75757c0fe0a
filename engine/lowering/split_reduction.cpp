#include "engine/lowering/split_reduction.h"

#include <algorithm>
#include <functional>
#include <set>

#include "engine/lowering/lowering_context.h"
#include "engine/lowering/program_edit.h"

namespace kiln::lowering {
namespace {

using capture::sym_const;
using capture::sym_is_const;

// The number of elements of `sizes` when it is a constant, else -1.
int64_t const_numel(const std::vector<Sym>& sizes) {
  const Sym n = numel(sizes);
  return sym_is_const(n) ? n->value : -1;
}

// Whether every load in e reads its computation with `row_var` as the index of the dim stored innermost.
bool rows_are_neighbours(const VExpr& e, const std::vector<Comp>& comps, int row_var) {
  bool ok = true, any = false;
  std::function<void(const VExpr&)> walk = [&](const VExpr& x) {
    if (!x || !ok) return;
    if (x->op == VExprNode::Op::Load) {
      any = true;
      const Comp& t = comps[static_cast<size_t>(x->comp)];
      if (t.sizes.empty() || x->index.size() != t.sizes.size()) {
        ok = false;
        return;
      }
      const int inner = storage_order(t).back();
      const auto& ix = x->index.at(static_cast<size_t>(inner));
      ok = ix->op == IExprNode::Op::Var && ix->var == row_var;
    }
    walk(x->a);
    walk(x->b);
    walk(x->c);
  };
  walk(e);
  return ok && any;
}

}  // namespace

std::vector<std::string> split_long_reductions(LoweredRegion& region) {
  std::vector<std::string> notes;
  // What the region's outputs are computed from (a reduction a fallback replaced is not: lowering tried it first).
  std::set<int> read(region.program.outputs.begin(), region.program.outputs.end());
  for (int c = static_cast<int>(region.program.comps.size()) - 1; c >= 0; --c)
    if (read.count(c)) read.insert(region.program.comps[c].deps.begin(), region.program.comps[c].deps.end());
  // Backwards: a computation inserted at i moves only those after it, which the walk has passed, so `read` stays
  // right for the rest of it.
  for (int i = static_cast<int>(region.program.comps.size()) - 1; i >= 0; --i) {
    if (!read.count(i)) continue;
    const Comp r = region.program.comps[static_cast<size_t>(i)];
    if (r.kind != Comp::Kind::Reduction || r.sizes.empty() || r.reduce_sizes.empty()) continue;
    if (r.reduce_op != "sum" && r.reduce_op != "max" && r.reduce_op != "min") continue;
    if (integral_dtype(r.dtype)) continue;  // integer sums stay exact in one pass (the parts would be float32)
    const int64_t rows = const_numel(r.sizes), length = const_numel(r.reduce_sizes);
    // From about a thousand rows the tiles fill the GPU unsplit: efficientnet_b0's 1152 rows of 3136 values took
    // 8.3 us in one pass on the H200 and 11.5 (8 parts) or 11.6 (2 parts) with their second step.
    if (rows < 1 || length < 2048 || rows >= 1024 || rows * length < (int64_t{1} << 20)) continue;
    const int rank = static_cast<int>(r.sizes.size()), reduced = static_cast<int>(r.reduce_sizes.size());
    if (!rows_are_neighbours(r.body, region.program.comps, rank - 1)) continue;
    // The fewest parts that give 8192 rows of at least 128 values (about two blocks of 32-row tiles per
    // multiprocessor), else the most that keep parts of 128 values, each part a whole number of the first reduced
    // size's steps; at least 2048 rows.
    const int64_t first = r.reduce_sizes[0]->value;
    int64_t parts = 0;
    for (int64_t s = 2; s <= 64 && s <= first; ++s) {
      if (first % s != 0 || length / s < 128) continue;
      parts = s;
      if (rows * s >= 8192) break;
    }
    if (!parts || rows * parts < 2048) continue;
    // P[s, out..., red...] = R's body with its first reduced index s * (first / parts) + its own.
    Comp p;
    p.kind = Comp::Kind::Reduction;
    p.name = r.name + "_parts";
    p.target = r.target;
    p.provenance = r.provenance;
    p.dtype = ir::DType::Float32;
    p.reduce_op = r.reduce_op;
    p.sizes.push_back(sym_const(parts));
    p.sizes.insert(p.sizes.end(), r.sizes.begin(), r.sizes.end());
    p.reduce_sizes = r.reduce_sizes;
    p.reduce_sizes[0] = sym_const(first / parts);
    std::vector<IExpr> index;
    for (int v = 0; v < rank; ++v) index.push_back(ie_var(v + 1));
    index.push_back(ie_add(ie_mul(ie_var(0), ie_const(first / parts)), ie_var(rank + 1)));
    for (int v = 1; v < reduced; ++v) index.push_back(ie_var(rank + 1 + v));
    p.body = ve_subst(r.body, index);
    p.deps = r.deps;
    insert_comp(region, i, std::move(p));
    // R (now at i + 1) sums its row's parts: P[s, out...] over s.
    Comp& whole = region.program.comps[static_cast<size_t>(i) + 1];
    std::vector<IExpr> at = {ie_var(rank)};
    for (int v = 0; v < rank; ++v) at.push_back(ie_var(v));
    whole.body = ve_load(i, at);
    whole.reduce_sizes = {sym_const(parts)};
    whole.deps = {i};
    notes.push_back("# split reduction: " + whole.name + " (" + std::to_string(rows) + " rows of " +
                    std::to_string(length) + " values) sums " + std::to_string(parts) + " parts of each row, " +
                    region.program.comps[static_cast<size_t>(i)].name + " (" + std::to_string(rows * parts) +
                    " rows of " + std::to_string(length / parts) + ")");
  }
  std::reverse(notes.begin(), notes.end());  // in program order
  return notes;
}

}  // namespace kiln::lowering
