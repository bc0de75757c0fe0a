// RowKernelEmitter's forms (emit_rows.h).
#include "engine/codegen/cuda/emit_rows.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

namespace kiln::codegen {

using fusion::FusedKernel;

namespace {

// "    float acc = <identity>;  // <op> for <name>": a reduction's accumulator, before its loop.
std::string accumulator(const Comp& comp, const std::string& acc) {
  const std::string& op = comp.reduce_op;
  return "    float " + acc + " = " + (op == "sum" ? "0.0f" : op == "max" ? "-INFINITY" : "INFINITY") + ";  // " + op +
         " for " + cpp_comment(comp.name) + "\n";
}

}  // namespace

void RowKernelEmitter::unflatten(std::ostringstream& os, const std::string& flat, const std::vector<Sym>& sizes, size_t first,
                                 const std::string& pad, std::vector<std::string>& vars, std::vector<int> order) {
  if (order.empty())
    for (size_t d = 0; d < sizes.size(); ++d) order.push_back(static_cast<int>(d));
  std::string rest = flat;
  for (size_t j = order.size(); j-- > 0;) {
    const size_t d = static_cast<size_t>(order[j]);
    std::string v = "i" + std::to_string(first + d);
    if (j == 0) os << pad << "const kiln_i " << v << " = " << rest << ";\n";
    else {
      os << pad << "const kiln_i " << v << " = " << rest << " % " << size(sizes[d]) << ";\n";
      os << pad << "const kiln_i q" << first + d << " = " << rest << " / " << size(sizes[d]) << ";\n";
      rest = "q" + std::to_string(first + d);
    }
  }
  for (size_t d = 0; d < sizes.size(); ++d) {
    vars.push_back("i" + std::to_string(first + d));
    set_extent(vars.back(), sizes[d]);  // flat < total: each variable stays below its size
  }
}

bool RowKernelEmitter::same_value(const VExpr& a, const VExpr& b) {
  if (a == b) return true;
  if (!a || !b || a->op != b->op || a->fn != b->fn || a->is_bool != b->is_bool) return false;
  switch (a->op) {
    case VExprNode::Op::Const: return a->value == b->value || (a->value != a->value && b->value != b->value);
    case VExprNode::Op::Scalar: return a->scalar == b->scalar;
    case VExprNode::Op::Load:
      if (a->comp != b->comp || a->index.size() != b->index.size()) return false;
      for (size_t d = 0; d < a->index.size(); ++d)
        if (!lowering::ie_equal(a->index[d], b->index[d])) return false;
      return true;
    default: break;
  }
  if (lowering::ve_is_index_fn(*a)) {
    if (a->index.size() != b->index.size()) return false;
    for (size_t d = 0; d < a->index.size(); ++d)
      if (!lowering::ie_equal(a->index[d], b->index[d])) return false;
    return true;
  }
  return same_value(a->a, b->a) && same_value(a->b, b->b) && same_value(a->c, b->c);
}

namespace {

// A floating first stage of row kernel k: the register form keeps it in registers as its stage writes it
// (float16/bfloat16: the value rounded as stored, which is what the later stages would read back).
bool kept_prologue(const fusion::FusedProgram& p, const FusedKernel& k, int c) {
  const auto dt = p.program.comps[static_cast<size_t>(c)].dtype;
  return fusion::row_prologue(p.program, k, c) &&
         (dt == ir::DType::Float32 || dt == ir::DType::Float16 || dt == ir::DType::BFloat16);
}

}  // namespace

bool RowKernelEmitter::read_later(const FusedKernel& k, int c) const {
  bool after = false;
  for (int other : k.comps) {
    if (after) {
      std::set<int> loads;
      lowering::collect_loads(p.program.comps[static_cast<size_t>(other)].body, loads);
      if (loads.count(c)) return true;
    }
    after = after || other == c;
  }
  return false;
}

bool RowKernelEmitter::same_sizes(const std::vector<Sym>& a, const std::vector<Sym>& b) {
  return size_product(a) == size_product(b);
}

bool RowKernelEmitter::row_load(const VExpr& e, int c, size_t outer) {
  if (!e || e->op != VExprNode::Op::Load || e->comp != c || e->index.size() != outer) return false;
  for (size_t d = 0; d < outer; ++d)
    if (e->index[d]->op != IExprNode::Op::Var || e->index[d]->var != static_cast<int>(d)) return false;
  return true;
}

RowKernelEmitter::RowPass RowKernelEmitter::row_pass(const FusedKernel& k, size_t i) {
  if (i + 1 >= k.comps.size()) return RowPass::Separate;
  const int c = k.comps[i];
  const Comp& first = p.program.comps[c];
  const Comp& second = p.program.comps[k.comps[i + 1]];
  const size_t outer = k.outer.size();
  if (first.kind != Comp::Kind::Reduction || second.kind != Comp::Kind::Reduction) return RowPass::Separate;
  if (first.reduce_sizes.empty() || first.reduce_sizes.size() != second.reduce_sizes.size() ||
      !same_sizes(first.reduce_sizes, second.reduce_sizes) || first.sizes.size() != outer ||
      second.sizes.size() != outer || !same_sizes(first.sizes, k.outer) || !same_sizes(second.sizes, k.outer))
    return RowPass::Separate;
  const VExpr& body = second.body;
  if (first.reduce_op == "max" && second.reduce_op == "sum" && first.post_div_sizes.empty() &&
      second.post_div_sizes.empty() && body->op == VExprNode::Op::Unary && body->fn == "exp" &&
      body->a->op == VExprNode::Op::Binary && body->a->fn == "sub" && row_load(body->a->b, c, outer) &&
      same_value(body->a->a, first.body))
    return RowPass::Online;
  auto mean_of_row = [&](const Comp& r) {
    return r.reduce_op == "sum" && !r.post_div_sizes.empty() && same_sizes(r.post_div_sizes, r.reduce_sizes);
  };
  auto centered = [&](const VExpr& d) {  // E - A[row]
    return d && d->op == VExprNode::Op::Binary && d->fn == "sub" && row_load(d->b, c, outer) &&
           same_value(d->a, first.body);
  };
  if (mean_of_row(first) && mean_of_row(second) && body->op == VExprNode::Op::Binary &&
      ((body->fn == "mul" && centered(body->a) && same_value(body->a, body->b)) ||
       (body->fn == "pow" && centered(body->a) && body->b->op == VExprNode::Op::Const && body->b->value == 2.0)))
    return RowPass::Welford;
  return RowPass::Separate;
}

std::vector<RowKernelEmitter::HeldLoad> RowKernelEmitter::held_loads(const FusedKernel& k, std::vector<Sym>& shape, int64_t& per_lane) {
  const size_t outer = k.outer.size();
  bool first = true;
  for (int c : k.comps) {
    const Comp& comp = p.program.comps[c];
    std::vector<Sym> loop = comp.kind == Comp::Kind::Reduction ? comp.reduce_sizes : fusion::row_stage(p.program, k, c).inner;
    if (loop.empty()) return {};
    for (const auto& s : loop)
      if (!capture::sym_is_const(s) || s->value <= 0) return {};
    if (first) shape = loop;
    first = false;
    if (loop.size() != shape.size()) return {};
    for (size_t d = 0; d < loop.size(); ++d)
      if (loop[d]->value != shape[d]->value) return {};
  }
  int64_t length = 1;
  for (const auto& s : shape) length *= s->value;
  per_lane = (length + 31) / 32;
  if (per_lane > 32) {
    per_lane = 0;
    return {};
  }
  const std::set<int> own(k.comps.begin(), k.comps.end());
  std::function<bool(const lowering::IExpr&)> along_row = [&](const lowering::IExpr& e) {
    if (!e) return false;
    if (e->op == IExprNode::Op::Var) return e->var >= static_cast<int>(outer);
    return along_row(e->a) || along_row(e->b);
  };
  std::vector<HeldLoad> held;
  std::function<void(const VExpr&)> walk = [&](const VExpr& e) {
    if (!e) return;
    if (e->op == VExprNode::Op::Load) {
      const Comp& src = p.program.comps[e->comp];
      const bool floating = src.dtype == ir::DType::Float32 || src.dtype == ir::DType::Float16 ||
                            src.dtype == ir::DType::BFloat16;
      bool along = false;
      for (const auto& i : e->index) along = along || along_row(i);
      if (!own.count(e->comp) && p.realized[e->comp] && floating && along &&
          static_cast<int64_t>(held.size() + 1) * per_lane <= 64 && !find_held(held, e)) {
        held.push_back({e->comp, e->index, "rv" + std::to_string(held.size())});
      }
      return;
    }
    if (e->op == VExprNode::Op::Where) {  // its condition only: the branches are read lazily
      walk(e->c);
      return;
    }
    walk(e->a);
    walk(e->b);
    walk(e->c);
  };
  for (int c : k.comps)
    if (p.program.comps[c].kind == Comp::Kind::Reduction) walk(p.program.comps[c].body);
  return held;
}

const RowKernelEmitter::HeldLoad* RowKernelEmitter::find_held(const std::vector<HeldLoad>& held, const VExpr& e) {
  for (const auto& h : held) {
    if (h.comp != e->comp || h.index.size() != e->index.size()) continue;
    bool same = true;
    for (size_t d = 0; d < h.index.size() && same; ++d) same = lowering::ie_equal(h.index[d], e->index[d]);
    if (same) return &h;
  }
  return nullptr;
}

void RowKernelEmitter::register_row(std::ostringstream& os, const FusedKernel& k, const std::vector<HeldLoad>& held,
                                    const std::vector<Sym>& shape, int64_t per_lane) {
  const size_t outer = k.outer.size();
  int64_t length = 1;
  for (const auto& s : shape) length *= s->value;
  const std::string n = std::to_string(per_lane);
  const bool ragged = length % 32 != 0;
  os << "  const kiln_i rows = " << size_product(k.outer) << ";\n";
  os << "  for (kiln_i row = (static_cast<kiln_i>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5; row < rows; "
        "row += (static_cast<kiln_i>(gridDim.x) * blockDim.x) >> 5) {\n";
  std::vector<std::string> vars;
  unflatten(os, "row", k.outer, 0, "    ", vars);
  os << "    // the row in registers: " << per_lane << (per_lane == 1 ? " value" : " values")
     << " per lane of each held load, read once\n";
  for (const auto& h : held) os << "    float " << h.name << "[" << n << "];\n";
  // A prologue read back at each element's own position stays in registers as well, written by its stage
  // instead of read first (within the 64 floats per lane held_loads allows); a 16-bit one rounded as stored.
  std::vector<HeldLoad> kept;
  for (int c : k.comps) {
    if (!kept_prologue(p, k, c) || static_cast<int64_t>(held.size() + kept.size() + 1) * per_lane > 64)
      continue;
    std::vector<lowering::IExpr> ident;
    for (size_t d = 0; d < p.program.comps[static_cast<size_t>(c)].sizes.size(); ++d) ident.push_back(lowering::ie_var(static_cast<int>(d)));
    kept.push_back({c, ident, "rp" + std::to_string(kept.size())});
    os << "    float " << kept.back().name << "[" << n << "];  // " << cpp_comment(p.program.comps[static_cast<size_t>(c)].name)
       << ", as its stage writes it\n";
  }
  // One unrolled loop over the lane's steps; `body` writes the step's statements.
  auto steps = [&](const std::function<void(const std::vector<std::string>&, const std::string&)>& body) {
    os << "    #pragma unroll\n    for (int j = 0; j < " << n << "; ++j) {\n";
    os << "      const kiln_i r = (threadIdx.x & 31) + 32 * j;\n";
    std::string pad = "      ";
    if (ragged) {
      os << "      if (r < " << lit(length) << ") {\n";
      pad = "        ";
    }
    std::vector<std::string> rvars = vars;
    unflatten(os, "r", shape, outer, pad, rvars);
    body(rvars, pad);
    if (ragged) os << "      }\n";
    os << "    }\n";
  };
  steps([&](const std::vector<std::string>& rvars, const std::string& pad) {
    for (const auto& h : held) {
      std::string v = statement(os, pad, lowering::ve_load(h.comp, h.index), rvars, {}, outer);
      os << pad << h.name << "[j] = " << v << ";  // " << cpp_comment(p.program.comps[h.comp].name) << "\n";
    }
  });
  load_hook = [&](const VExpr& e, const std::vector<std::string>&) -> std::string {
    const HeldLoad* h = find_held(held, e);
    if (!h) h = find_held(kept, e);
    return h ? h->name + "[j]" : "";
  };
  std::map<int, std::string> accs;
  std::vector<lowering::IExpr> row_idx;
  for (size_t d = 0; d < outer; ++d) row_idx.push_back(lowering::ie_var(static_cast<int>(d)));
  for (int c : k.comps) {
    const Comp& comp = p.program.comps[c];
    if (comp.kind == Comp::Kind::Reduction) {
      const std::string acc = "acc" + std::to_string(c);
      const std::string& op = comp.reduce_op;
      os << accumulator(comp, acc);
      steps([&](const std::vector<std::string>& rvars, const std::string& pad) {
        std::string v = statement(os, pad, comp.body, rvars, accs, outer);
        if (op == "sum") os << pad << acc << " += " << v << ";\n";
        else os << pad << acc << " = kiln_" << op << "(" << acc << ", " << v << ");\n";
      });
      os << "    " << acc << " = kiln_warp_" << op << "(" << acc << ");\n";
      if (!comp.post_div_sizes.empty())
        os << "    " << acc << " = " << acc << " / static_cast<float>(" << size_product(comp.post_div_sizes) << ");\n";
      os << "    if ((threadIdx.x & 31) == 0) b" << c << "[" << offset(c, row_idx, vars) << "] = " << acc << ";\n";
      accs[c] = acc;
    } else {
      const fusion::RowStage st = fusion::row_stage(p.program, k, c);
      const HeldLoad* keep = nullptr;
      for (const auto& h : kept) keep = h.comp == c ? &h : keep;
      steps([&](const std::vector<std::string>& rvars, const std::string& pad) {
        std::string v = statement(os, pad, st.body, rvars, accs, outer, &comp);
        if (keep) {
          const auto dt = comp.dtype;
          if (dt == ir::DType::Float32) os << pad << keep->name << "[j] = " << v << ";\n";
          else os << pad << keep->name << "[j] = static_cast<float>(" << ctype(dt) << "(" << v << "));  // as stored\n";
          v = keep->name + "[j]";
        }
        os << pad << "b" << c << "[" << offset(c, st.index, rvars) << "] = " << v << ";  // " << cpp_comment(comp.name) << "\n";
      });
      if (read_later(k, c)) os << "    __syncwarp();  // the next stages read what the warp's lanes wrote\n";
    }
  }
  load_hook = nullptr;
  os << "    __syncwarp();\n  }\n";
}

void RowKernelEmitter::row(std::ostringstream& os, const FusedKernel& k, bool warp) {
  if (warp) {
    std::vector<Sym> shape;
    int64_t per_lane = 0;
    auto held = held_loads(k, shape, per_lane);
    bool prologue = false;  // a first stage to keep in registers (register_row)
    for (int c : k.comps) prologue |= kept_prologue(p, k, c);
    if (!held.empty() || (per_lane > 0 && prologue)) {
      register_row(os, k, held, shape, per_lane);
      return;
    }
  }
  const std::string step = warp ? "32" : "blockDim.x";
  const std::string first = warp ? "(threadIdx.x & 31)" : "threadIdx.x";
  std::vector<RowPass> passes;
  for (size_t i = 0; i < k.comps.size(); ++i) passes.push_back(row_pass(k, i));
  if (!warp) {  // 33 floats per value the block reductions carry (a Welford merge carries three)
    int lanes = 1;
    for (RowPass pass : passes) lanes = std::max(lanes, pass == RowPass::Welford ? 3 : pass == RowPass::Online ? 2 : 1);
    os << "  __shared__ float smem[" << 33 * lanes << "];\n";
  }
  os << "  const kiln_i rows = " << size_product(k.outer) << ";\n";
  if (warp)
    os << "  for (kiln_i row = (static_cast<kiln_i>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5; row < rows; "
          "row += (static_cast<kiln_i>(gridDim.x) * blockDim.x) >> 5) {\n";
  else
    os << "  for (kiln_i row = blockIdx.x; row < rows; row += gridDim.x) {\n";
  std::vector<std::string> vars;
  unflatten(os, "row", k.outer, 0, "    ", vars);
  std::map<int, std::string> accs;
  std::vector<lowering::IExpr> row_idx;
  for (size_t d = 0; d < k.outer.size(); ++d) row_idx.push_back(lowering::ie_var(static_cast<int>(d)));
  auto store = [&](int c, const std::string& acc) {
    os << "    if (" << first << " == 0) b" << c << "[" << offset(c, row_idx, vars) << "] = " << acc << ";\n";
    accs[c] = acc;
  };
  for (size_t i = 0; i < k.comps.size(); ++i) {
    const int c = k.comps[i];
    const Comp& comp = p.program.comps[c];
    if (passes[i] != RowPass::Separate) {
      // One loop for reductions c and c2 (row_pass says which form): each thread folds its
      // share of the row into its state, the warp or block merges the states, and both
      // accumulators end as the two loops would leave them.
      const int c2 = k.comps[i + 1];
      const Comp& comp2 = p.program.comps[c2];
      const std::string acc = "acc" + std::to_string(c), acc2 = "acc" + std::to_string(c2), n = "n" + std::to_string(c);
      const std::string length = size_product(comp.reduce_sizes);
      // A row of symbolic length may be empty at run time; the two loops leave their identities then.
      bool maybe_empty = false;
      for (const auto& s : comp.reduce_sizes) maybe_empty |= !capture::sym_is_const(s) || s->value <= 0;
      const bool online = passes[i] == RowPass::Online;
      if (online) {
        os << "    // online softmax: max and sum in one pass\n"
           << "    float " << acc << " = -INFINITY;  // max for " << cpp_comment(comp.name) << "\n"
           << "    float " << acc2 << " = 0.0f;  // sum for " << cpp_comment(comp2.name) << "\n";
      } else {
        os << "    // welford: mean and variance in one pass\n"
           << "    int " << n << " = 0;  // values this thread has seen\n"
           << "    float " << acc << " = 0.0f;  // mean for " << cpp_comment(comp.name) << "\n"
           << "    float " << acc2 << " = 0.0f;  // variance for " << cpp_comment(comp2.name) << "\n";
      }
      const std::string shift = "shift" + std::to_string(c);
      if (!online) {
        // Welford's rounding grows with |mean| / stddev (each running mean is rounded at the mean's
        // magnitude); values minus the row's first one have a mean near their spread.
        std::vector<std::string> at0 = vars;
        at0.resize(k.outer.size() + comp.reduce_sizes.size(), "0");
        if (maybe_empty) {
          os << "    float " << shift << " = 0.0f;  // the row's first value: Welford runs on the values minus it\n"
             << "    if (" << length << " > 0) {\n";
          std::string v0 = statement(os, "      ", comp.body, at0, accs, k.outer.size());
          os << "      " << shift << " = " << v0 << ";\n    }\n";
        } else {
          std::string v0 = statement(os, "    ", comp.body, at0, accs, k.outer.size());
          os << "    const float " << shift << " = " << v0 << ";  // the row's first value: Welford runs on the values minus it\n";
        }
      }
      os << "    for (kiln_i r = " << first << "; r < " << length << "; r += " << step << ") {\n";
      std::vector<std::string> rvars = vars;
      unflatten(os, "r", comp.reduce_sizes, k.outer.size(), "      ", rvars);
      std::string v = statement(os, "      ", comp.body, rvars, accs, k.outer.size());
      if (online) os << "      kiln_online_add(" << acc << ", " << acc2 << ", " << v << ");\n    }\n";
      else os << "      kiln_welford_add(" << n << ", " << acc << ", " << acc2 << ", " << v << " - " << shift << ");\n    }\n";
      if (online) {
        if (warp) os << "    kiln_warp_online(" << acc << ", " << acc2 << ");\n";
        else os << "    kiln_block_online(" << acc << ", " << acc2 << ", smem);\n";
        os << "    if (" << acc << " == -INFINITY" << (maybe_empty ? " && " + length + " > 0" : "") << ") " << acc2
           << " = NAN;  // as two passes give: exp(-inf - -inf) summed over a row of only -inf\n";
      } else {
        if (warp) os << "    kiln_warp_welford(" << n << ", " << acc << ", " << acc2 << ");\n";
        else os << "    kiln_block_welford(" << n << ", " << acc << ", " << acc2 << ", smem);\n";
        os << "    " << acc << " = " << shift << " + " << acc << ";\n";
        if (maybe_empty) os << "    if (" << n << " == 0) " << acc << " = NAN;  // 0 / 0, as sum / n gives\n";
        os << "    " << acc2 << " = " << acc2 << " / static_cast<float>(" << size_product(comp2.post_div_sizes) << ");  // from M2 to the variance\n";
      }
      store(c, acc);
      store(c2, acc2);
      ++i;
    } else if (comp.kind == Comp::Kind::Reduction) {
      std::string acc = "acc" + std::to_string(c);
      std::string op = comp.reduce_op;
      os << accumulator(comp, acc);
      os << "    for (kiln_i r = " << first << "; r < " << size_product(comp.reduce_sizes) << "; r += " << step << ") {\n";
      std::vector<std::string> rvars = vars;
      unflatten(os, "r", comp.reduce_sizes, k.outer.size(), "      ", rvars);
      std::string v = statement(os, "      ", comp.body, rvars, accs, k.outer.size());
      if (op == "sum") os << "      " << acc << " += " << v << ";\n";
      else os << "      " << acc << " = kiln_" << op << "(" << acc << ", " << v << ");\n";
      os << "    }\n";
      if (warp) os << "    " << acc << " = kiln_warp_" << op << "(" << acc << ");\n";
      else os << "    " << acc << " = kiln_block_" << op << "(" << acc << ", smem);\n";
      if (!comp.post_div_sizes.empty())
        os << "    " << acc << " = " << acc << " / static_cast<float>(" << size_product(comp.post_div_sizes) << ");\n";
      store(c, acc);
    } else {
      const fusion::RowStage st = fusion::row_stage(p.program, k, c);
      os << "    for (kiln_i e = " << first << "; e < " << size_product(st.inner) << "; e += " << step << ") {\n";
      std::vector<std::string> ivars = vars;
      unflatten(os, "e", st.inner, k.outer.size(), "      ", ivars);
      std::string v = statement(os, "      ", st.body, ivars, accs, k.outer.size(), &comp);
      os << "      b" << c << "[" << offset(c, st.index, ivars) << "] = " << v << ";  // " << cpp_comment(comp.name) << "\n";
      os << "    }\n";
      if (read_later(k, c))
        os << (warp ? "    __syncwarp();" : "    __syncthreads();") << "  // the next stages read what the row's threads wrote\n";
    }
  }
  os << (warp ? "    __syncwarp();\n  }\n" : "    __syncthreads();\n  }\n");
}

namespace {

// The variables of flat row `row` (and their index expressions), decomposed in the storage order of
// the reductions' output: a channels-last pooling walks the channel fastest, so neighbouring
// threads or lanes read and write neighbouring elements.
void unflatten_rows(RowKernelEmitter& em, std::ostringstream& os, const FusedKernel& k, std::vector<std::string>& vars,
                    std::vector<lowering::IExpr>& row_idx) {
  const auto& first = em.p.program.comps[k.comps[0]];
  em.unflatten(os, "row", k.outer, 0, "    ", vars, first.sizes.size() == k.outer.size() ? first.layout : std::vector<int>{});
  for (size_t d = 0; d < k.outer.size(); ++d) row_idx.push_back(lowering::ie_var(static_cast<int>(d)));
}

}  // namespace

void emit_column(RowKernelEmitter& em, std::ostringstream& os, const FusedKernel& k) {
  const auto& p = em.p;
  os << "  const kiln_i rows = " << em.size_product(k.outer) << ";\n";
  os << "  for (kiln_i row = static_cast<kiln_i>(blockIdx.x) * blockDim.x + threadIdx.x; row < rows; "
        "row += static_cast<kiln_i>(gridDim.x) * blockDim.x) {\n";
  std::vector<std::string> vars;
  std::vector<lowering::IExpr> row_idx;
  unflatten_rows(em, os, k, vars, row_idx);
  std::map<int, std::string> accs;
  for (int c : k.comps) {
    const Comp& comp = p.program.comps[c];
    std::string acc = "acc" + std::to_string(c);
    const std::string& op = comp.reduce_op;
    os << accumulator(comp, acc);
    os << "    for (kiln_i r = 0; r < " << em.size_product(comp.reduce_sizes) << "; ++r) {\n";
    std::vector<std::string> rvars = vars;
    em.unflatten(os, "r", comp.reduce_sizes, k.outer.size(), "      ", rvars);
    std::string v = em.statement(os, "      ", comp.body, rvars, accs, k.outer.size());
    if (op == "sum") os << "      " << acc << " += " << v << ";\n";
    else os << "      " << acc << " = kiln_" << op << "(" << acc << ", " << v << ");\n";
    os << "    }\n";
    if (!comp.post_div_sizes.empty())
      os << "    " << acc << " = " << acc << " / static_cast<float>(" << em.size_product(comp.post_div_sizes) << ");\n";
    os << "    b" << c << "[" << em.offset(c, row_idx, vars) << "] = " << acc << ";\n";
    accs[c] = acc;
  }
  os << "  }\n";
}

void emit_row_tiles(RowKernelEmitter& em, std::ostringstream& os, const FusedKernel& k, int width) {
  const auto& p = em.p;
  const std::string w = std::to_string(width), pitch = std::to_string(width + 1);
  os << "  __shared__ float part[32 * " << pitch << "];  // each warp's partial result per row of the tile\n";
  os << "  const int lane = threadIdx.x % " << w << ", slice = threadIdx.x / " << w << ", slices = blockDim.x / " << w
     << ", warp = threadIdx.x >> 5, warps = blockDim.x >> 5;\n";
  os << "  const kiln_i rows = " << em.size_product(k.outer) << ";\n";
  os << "  for (kiln_i tile = blockIdx.x; tile * " << w << " < rows; tile += gridDim.x) {\n";
  os << "    const kiln_i row = tile * " << w << " + lane;\n";
  os << "    const bool live = row < rows;  // the last tile may be partial\n";
  std::vector<std::string> vars;
  std::vector<lowering::IExpr> row_idx;
  unflatten_rows(em, os, k, vars, row_idx);
  std::map<int, std::string> accs;
  for (int c : k.comps) {
    const Comp& comp = p.program.comps[c];
    if (comp.kind != Comp::Kind::Reduction) {  // one element per row: the first slice writes it
      const fusion::RowStage st = fusion::row_stage(p.program, k, c);
      std::vector<std::string> ivars = vars;
      for (size_t d = 0; d < st.inner.size(); ++d) ivars.push_back(em.lit(0));
      os << "    if (live && slice == 0) {\n";
      std::string v = em.statement(os, "      ", st.body, ivars, accs, k.outer.size(), &comp);
      os << "      b" << c << "[" << em.offset(c, st.index, ivars) << "] = " << v << ";  // " << cpp_comment(comp.name) << "\n";
      os << "    }\n";
      continue;
    }
    const std::string acc = "acc" + std::to_string(c);
    const std::string& op = comp.reduce_op;
    auto fold = [&](const std::string& v) {
      return op == "sum" ? acc + " += " + v + ";" : acc + " = kiln_" + op + "(" + acc + ", " + v + ");";
    };
    os << accumulator(comp, acc);
    os << "    if (live) {\n";
    os << "      for (kiln_i r = slice; r < " << em.size_product(comp.reduce_sizes) << "; r += slices) {\n";
    std::vector<std::string> rvars = vars;
    em.unflatten(os, "r", comp.reduce_sizes, k.outer.size(), "        ", rvars);
    std::string v = em.statement(os, "        ", comp.body, rvars, accs, k.outer.size());
    os << "        " << fold(v) << "\n      }\n    }\n";
    if (width < 32)  // the slices of a warp first (lanes width, 2 width, ... apart hold one row)
      os << "    for (int o = 16; o >= " << w << "; o >>= 1) " << fold("__shfl_down_sync(0xffffffffu, " + acc + ", o)") << "\n";
    os << "    if ((threadIdx.x & 31) < " << w << ") part[warp * " << pitch << " + lane] = " << acc << ";\n    __syncthreads();\n";
    os << "    " << acc << " = part[lane];\n";
    os << "    for (int s = 1; s < warps; ++s) " << fold("part[s * " + pitch + " + lane]") << "\n";
    if (!comp.post_div_sizes.empty())
      os << "    " << acc << " = " << acc << " / static_cast<float>(" << em.size_product(comp.post_div_sizes) << ");\n";
    os << "    if (live && slice == 0) b" << c << "[" << em.offset(c, row_idx, vars) << "] = " << acc << ";\n";
    os << "    __syncthreads();  // part is written again by the next reduction or tile\n";
    accs[c] = acc;
  }
  os << "  }\n";
}

}  // namespace kiln::codegen
