#include "engine/codegen/cuda/kernel_mapping.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <optional>

namespace kiln::codegen {

using fusion::FusedKernel;
using lowering::Comp;
using lowering::IExprNode;
using lowering::Sym;
using lowering::VExpr;
using lowering::VExprNode;

namespace {

// Integer value of an index expression with every var 0 but `var` (= 1); nullopt for symbolic sizes. A clamp
// into bounds (min or max with a constant: a window's padded tap) counts as its operand, as it is inside the
// input, where the strides are measured.
std::optional<int64_t> eval_at(const lowering::IExpr& e, int var) {
  using Op = IExprNode::Op;
  switch (e->op) {
    case Op::Const: return e->value;
    case Op::Var: return e->var == var ? 1 : 0;
    case Op::Size:
      if (!capture::sym_is_const(e->size)) return std::nullopt;
      return e->size->value;
    case Op::Min:
    case Op::Max:
      if (e->b->op == Op::Const) return eval_at(e->a, var);
      if (e->a->op == Op::Const) return eval_at(e->b, var);
      return std::nullopt;
    default: break;
  }
  auto a = eval_at(e->a, var), b = eval_at(e->b, var);
  if (!a || !b) return std::nullopt;
  switch (e->op) {
    case Op::Add: return *a + *b;
    case Op::Mul: return *a * *b;
    case Op::FloorDiv: return *b == 0 ? std::nullopt : std::optional<int64_t>(*a / *b);
    case Op::Mod: return *b == 0 ? std::nullopt : std::optional<int64_t>(*a % *b);
    default: return std::nullopt;
  }
}

// Element offset of load e (of computation src's storage) with every var 0 but `var` (= 1; -1:
// none): a linear function of one var at a time, for affine indices. nullopt when symbolic.
std::optional<int64_t> offset_at(const Comp& src, const VExpr& e, int var) {
  const auto order = lowering::storage_order(src);
  int64_t off = 0;
  for (size_t d = 0; d < e->index.size(); ++d) {
    auto i = eval_at(e->index[d], var);
    if (!i) return std::nullopt;
    int64_t stride = 1;
    size_t pos = 0;
    while (order[pos] != static_cast<int>(d)) ++pos;
    for (size_t j = pos + 1; j < order.size(); ++j) {
      if (!capture::sym_is_const(src.sizes[order[j]])) return std::nullopt;
      stride *= src.sizes[order[j]]->value;
    }
    off += *i * stride;
  }
  return off;
}

}  // namespace

std::optional<TransposeVars> transpose_vars(const fusion::FusedProgram& p, const FusedKernel& k) {
  if (k.kind != FusedKernel::Kind::Pointwise || k.comps.size() != 1) return std::nullopt;
  const Comp& comp = p.program.comps[k.comps[0]];
  const auto t = comp.dtype;
  if (t != ir::DType::Float32 && t != ir::DType::Float16 && t != ir::DType::BFloat16) return std::nullopt;
  if (comp.sizes.size() < 2 || !p.realized[k.comps[0]]) return std::nullopt;
  for (const auto& s : comp.sizes)
    if (!capture::sym_is_const(s)) return std::nullopt;
  TransposeVars tv;
  tv.out = lowering::storage_order(comp).back();
  bool ok = true;
  int loads = 0;
  std::function<void(const VExpr&)> walk = [&](const VExpr& e) {
    if (!e || !ok) return;
    if (e->op == VExprNode::Op::Load && e->comp != k.comps[0] && p.realized[e->comp]) {
      const Comp& src = p.program.comps[e->comp];
      auto base = offset_at(src, e, -1);
      auto along_out = offset_at(src, e, tv.out);
      if (!base || !along_out || std::llabs(*along_out - *base) == 1) {
        ok = false;  // unknown, or already contiguous along the output's walk
        return;
      }
      int unit = -1;
      for (int v = 0; v < static_cast<int>(comp.sizes.size()) && unit < 0; ++v) {
        auto at = offset_at(src, e, v);
        if (at && std::llabs(*at - *base) == 1) unit = v;
      }
      if (unit < 0 || (tv.in >= 0 && unit != tv.in)) {
        ok = false;
        return;
      }
      tv.in = unit;
      ++loads;
    }
    walk(e->a);
    walk(e->b);
    walk(e->c);
  };
  walk(comp.body);
  if (!ok || loads == 0 || tv.in < 0 || tv.in == tv.out) return std::nullopt;
  if (comp.sizes[tv.in]->value < 16 || comp.sizes[tv.out]->value < 16) return std::nullopt;
  return tv;
}

namespace {

// What the row forms below decide from: a row kernel of reductions only, every size constant,
// and how its loads from other buffers step between neighbouring rows and along a row.
struct RowWalk {
  int64_t rows = 1;
  int64_t longest = 0;     // the longest reduced row
  bool tiny_rows = true;   // every row at most 16 long (pooling windows)
  bool too_long = false;   // a row longer than 1024
  int along_rows = 0;      // loads stepping one element from row to row (a column reduction's)
  int along_row = 0;       // loads stepping one element along the row
  bool epilogue = false;   // pointwise computations of one element per row (a pooled value's 4-d view)
};

std::optional<RowWalk> row_walk(const fusion::FusedProgram& p, const FusedKernel& k) {
  if (k.outer.empty()) return std::nullopt;
  RowWalk w;
  for (const auto& s : k.outer) {
    if (!capture::sym_is_const(s)) return std::nullopt;
    w.rows *= s->value;
  }
  // The outer var that steps between neighbouring rows: the innermost stored one.
  const Comp& head = p.program.comps[k.comps[0]];
  const int last_outer = head.sizes.size() == k.outer.size() ? lowering::storage_order(head).back()
                                                               : static_cast<int>(k.outer.size()) - 1;
  for (int c : k.comps) {
    const Comp& comp = p.program.comps[c];
    // A prologue (written before the reductions read it) runs in the warp and block forms only.
    if (fusion::row_prologue(p.program, k, c)) return std::nullopt;
    if (comp.kind == Comp::Kind::Pointwise) {
      for (const auto& s : fusion::row_stage(p.program, k, c).inner)
        if (!capture::sym_is_const(s) || s->value != 1) return std::nullopt;
      w.epilogue = true;
      continue;
    }
    if (comp.kind != Comp::Kind::Reduction || comp.reduce_sizes.empty()) return std::nullopt;
    int64_t n = 1;
    for (const auto& s : comp.reduce_sizes) {
      if (!capture::sym_is_const(s)) return std::nullopt;
      n *= s->value;
    }
    w.longest = std::max(w.longest, n);
    w.too_long = w.too_long || n > 1024;
    w.tiny_rows = w.tiny_rows && n <= 16;
    const int inner = static_cast<int>(k.outer.size() + comp.reduce_sizes.size()) - 1;  // innermost reduced var
    bool unknown = false;
    std::function<void(const VExpr&)> walk = [&](const VExpr& e) {
      if (!e) return;
      if (e->op == VExprNode::Op::Load && p.realized[e->comp] && std::find(k.comps.begin(), k.comps.end(), e->comp) == k.comps.end()) {
        // Element offset of the load, as a linear function of one var at a time.
        const Comp& src = p.program.comps[e->comp];
        const auto order = lowering::storage_order(src);
        auto offset_at = [&](int var) -> std::optional<int64_t> {
          int64_t off = 0;
          for (size_t d = 0; d < e->index.size(); ++d) {
            auto i = eval_at(e->index[d], var);
            if (!i) return std::nullopt;
            int64_t stride = 1;
            size_t pos = 0;
            while (order[pos] != static_cast<int>(d)) ++pos;
            for (size_t j = pos + 1; j < order.size(); ++j) {
              if (!capture::sym_is_const(src.sizes[order[j]])) return std::nullopt;
              stride *= src.sizes[order[j]]->value;
            }
            off += *i * stride;
          }
          return off;
        };
        auto base = offset_at(-1), step_rows = offset_at(last_outer), step_row = offset_at(inner);
        if (!base || !step_rows || !step_row) {
          unknown = true;
        } else {
          const int64_t across = std::llabs(*step_rows - *base), along = std::llabs(*step_row - *base);
          if (along == 1) ++w.along_row;
          else if (across == 1) ++w.along_rows;
        }
      }
      walk(e->a);
      walk(e->b);
      walk(e->c);
    };
    walk(comp.body);
    if (unknown) return std::nullopt;
  }
  return w;
}

}  // namespace

// One thread per row pays when there are enough rows to fill the GPU with one thread each, every
// computation is a reduction (no per-element epilogue) and the rows are tiny (pooling windows: a
// warp per 9-element row would idle most of its lanes). Longer column-like rows run in row tiles.
bool column_reduction(const fusion::FusedProgram& p, const FusedKernel& k) {
  auto w = row_walk(p, k);
  return w && w->rows >= 2048 && !w->too_long && w->tiny_rows && !w->epilogue;
}

RowTile row_tile(const fusion::FusedProgram& p, const FusedKernel& k) {
  auto w = row_walk(p, k);
  if (!w || w->tiny_rows || w->along_rows <= w->along_row) return {};
  RowTile t;
  t.reductions_only = !w->epilogue;
  // Measured on the H200 (mobilenet_v3_small, efficientnet_b0, batch 8): rows of up to a thousand
  // values run faster one warp per row (2.8-3.0 us against 4-5 in tiles: the warp holds its share
  // of the row in registers, every load in flight at once); 768 and 1152 rows of 3136 values ran
  // 15 -> 9.5 and 27 -> 12 us in tiles, while 256 rows of 12544 stayed faster one block per row
  // (256 blocks against 32 tiles).
  // Then (efficientnet_b0, its SE poolings among depthwise kernels of four channels per thread or one): 1152 rows of
  // 784 values 5.4 -> 4.2 us in tiles, 3840 of 196 4.8 -> 3.1, 9216 of 49 3.7 -> 2.5, where mobilenet_v3_small's
  // 1152 rows of 196 stayed faster one warp per row (2.7 against 4.1) and 1920 of 196 ran even: a warp reading a
  // channels-last row touches a sector per value, and once the rows add up to a few hundred thousand values the
  // neighbouring warps no longer find those sectors in L1.
  t.preferred = w->rows >= 512 && (w->longest > 1024 || w->rows * w->longest >= 400000);
  // Wide tiles while they leave enough blocks to spread over the GPU; narrower ones (a 32-byte
  // sector per 8 rows is still read whole) for few rows.
  t.width = w->rows >= 32 * 128 ? 32 : w->rows >= 16 * 128 ? 16 : 8;
  // About 8 values per thread along the row, at most 1024 threads and at least a warp.
  int64_t slices = 1;
  while (slices * 2 * t.width <= 1024 && slices * 2 * 8 <= w->longest) slices *= 2;
  t.threads = static_cast<int>(std::max<int64_t>(32, slices * t.width));
  return t;
}

// Rows whose every loop is at most 1024 long run one warp per row by default; longer rows keep a
// whole block per row.
bool warp_per_row(const fusion::FusedProgram& p, const FusedKernel& k) {
  for (int c : k.comps) {
    const Comp& comp = p.program.comps[c];
    std::vector<Sym> loop = comp.kind == Comp::Kind::Reduction ? comp.reduce_sizes : fusion::row_stage(p.program, k, c).inner;
    int64_t n = 1;
    for (const auto& s : loop) {
      if (!capture::sym_is_const(s)) return false;
      n *= s->value;
    }
    if (n > 1024) return false;
  }
  return true;
}

bool layout_copy(const fusion::FusedProgram& p, const FusedKernel& k) {
  if (k.kind != FusedKernel::Kind::Pointwise || k.comps.size() != 1) return false;
  const Comp& c = p.program.comps[k.comps[0]];
  const VExpr& body = c.body;
  if (c.sizes.size() != 4 || !body || body->op != VExprNode::Op::Load || !p.realized[body->comp]) return false;
  const Comp& src = p.program.comps[body->comp];
  if (src.sizes.size() != 4 || lowering::storage_order(src).back() != 3 || body->index.size() != 4) return false;
  for (size_t d = 0; d < 4; ++d)
    if (body->index[d]->op != lowering::IExprNode::Op::Var || body->index[d]->var != static_cast<int>(d)) return false;
  return true;
}

namespace {

// Whether k is a window's kernel: pointwise, a constant 4-d iteration space shared by every computation and stored
// with another dim than the width innermost, one of them reading a window; or a layout_copy.
bool window_kernel(const fusion::FusedProgram& p, const FusedKernel& k) {
  if (k.kind != FusedKernel::Kind::Pointwise) return false;
  const Comp& first = p.program.comps[k.comps[0]];
  if (first.sizes.size() != 4 || lowering::storage_order(first).back() == 3) return false;
  for (const auto& s : first.sizes)
    if (!capture::sym_is_const(s) || s->value < 1) return false;
  bool window = false;
  for (int c : k.comps) {
    const Comp& comp = p.program.comps[c];
    if (comp.sizes.size() != 4) return false;
    for (size_t d = 0; d < 4; ++d)
      if (!capture::sym_is_const(comp.sizes[d]) || comp.sizes[d]->value != first.sizes[d]->value) return false;
    window |= fusion::reads_a_window(comp.body);
  }
  return window || layout_copy(p, k);
}

// Whether one of k's computations reads a convolution's window (a depthwise convolution lowered to loops), rather
// than a pooling's.
bool convolution_window(const fusion::FusedProgram& p, const FusedKernel& k) {
  for (int c : k.comps)
    if (fusion::reads_a_convolution_window(p.program.comps[c].body)) return true;
  return false;
}

}  // namespace

int window_lanes(const fusion::FusedProgram& p, const FusedKernel& k) {
  if (!window_kernel(p, k)) return 1;
  for (int c : k.comps) {
    const Comp& comp = p.program.comps[c];
    if (comp.dtype != ir::DType::Float32 || lowering::storage_order(comp).back() != 1 || comp.sizes[1]->value % 4 != 0)
      return 1;
  }
  return 4;
}

int window_rows(const fusion::FusedProgram& p, const FusedKernel& k) {
  if (!window_kernel(p, k)) return 1;
  const int64_t width = p.program.comps[k.comps[0]].sizes[3]->value;
  if (!convolution_window(p, k)) {
    if (width % 4 == 0) return 4;
    if (width % 2 == 0) return 2;
    return width <= 8 ? static_cast<int>(width) : 1;
  }
  for (int d : {8, 4, 7, 6, 5, 2})
    if (width % d == 0) return d;
  return width <= 8 ? static_cast<int>(width) : 1;
}

int window_height(const fusion::FusedProgram& p, const FusedKernel& k) {
  if (!window_kernel(p, k) || !convolution_window(p, k)) return 1;
  return p.program.comps[k.comps[0]].sizes[2]->value % 2 == 0 ? 2 : 1;
}

int vector_width(const fusion::FusedProgram& p, const FusedKernel& k) {
  const Comp& first = p.program.comps[k.comps[0]];
  if (first.sizes.empty()) return 1;
  // A window's taps (a depthwise convolution) one element per thread: with 4, each lane's taps are scalar loads 16
  // bytes apart across the warp, and the unrolled lanes quadruple the code NVRTC compiles (a 5x5 window's kernel
  // 0.6-0.8 s of NVRTC here, the longest unit of a cold compile).
  for (int c : k.comps)
    if (fusion::reads_a_window(p.program.comps[c].body)) return 1;
  const auto& inner = first.sizes[lowering::storage_order(first).back()];
  if (!capture::sym_is_const(inner)) return 1;
  return inner->value % 4 == 0 ? 4 : 1;
}

}  // namespace kiln::codegen
