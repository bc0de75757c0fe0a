#include "engine/lowering/program_edit.h"

#include <memory>

namespace kiln::lowering {
namespace {

// e with every load of a computation at index >= at reading the one after it.
VExpr shift_loads(const VExpr& e, int at) {
  if (!e) return e;
  VExpr a = shift_loads(e->a, at), b = shift_loads(e->b, at), c = shift_loads(e->c, at);
  const bool moved = e->op == VExprNode::Op::Load && e->comp >= at;
  if (!moved && a == e->a && b == e->b && c == e->c) return e;
  auto n = std::make_shared<VExprNode>(*e);
  if (moved) ++n->comp;
  n->a = a;
  n->b = b;
  n->c = c;
  return n;
}

}  // namespace

void insert_comp(LoweredRegion& region, int at, Comp c) {
  auto& comps = region.program.comps;
  auto shift = [&](int& i) {
    if (i >= at) ++i;
  };
  for (auto& comp : comps) {
    comp.body = shift_loads(comp.body, at);
    for (int& d : comp.deps) shift(d);
    for (int& o : comp.operands) shift(o);
  }
  for (int& o : region.program.outputs) shift(o);
  for (auto& [name, t] : region.tensor_of) shift(t);
  comps.insert(comps.begin() + at, std::move(c));
}

}  // namespace kiln::lowering
