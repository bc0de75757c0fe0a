// Buffer lifetimes and slots; see memory_plan.h.
#include "engine/fusion/memory_plan.h"

#include <algorithm>
#include <cstdio>
#include <tuple>
#include <set>
#include <sstream>

#include "engine/capture/sym.h"

namespace kiln::fusion {

using lowering::Comp;

namespace {

// Size, dtype and layout as one key: buffers with equal keys can take each other's memory.
std::string shape_key(const Comp& c) {
  std::string k = std::to_string(static_cast<int>(c.dtype)) + "|";
  for (const auto& s : c.sizes) k += capture::sym_str(s) + ",";
  k += "|";
  for (int d : c.layout) k += std::to_string(d) + ",";
  return k;
}

int64_t dtype_bytes(ir::DType t) {
  const int n = ir::dtype_size(t);
  return n > 0 ? n : 4;  // unknown: the float32 buffers the runtime makes for them
}

std::string bytes_text(int64_t b) {
  if (b < 0) return "-";
  char buf[48];
  if (b >= (int64_t(1) << 20)) std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(b) / (1 << 20));
  else if (b >= 1024) std::snprintf(buf, sizeof buf, "%.1f KiB", static_cast<double>(b) / 1024);
  else std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(b));
  return buf;
}

// Every load of r in e indexes it at the iteration's own position (vars 0..rank-1 in order).
bool identity_loads(const lowering::VExpr& e, int r, size_t rank) {
  if (!e) return true;
  if (e->op == lowering::VExprNode::Op::Load && e->comp == r) {
    if (e->index.size() != rank) return false;
    for (size_t d = 0; d < rank; ++d)
      if (!e->index[d] || e->index[d]->op != lowering::IExprNode::Op::Var || e->index[d]->var != static_cast<int>(d))
        return false;
  }
  if (lowering::ve_is_index_fn(*e)) return true;
  return identity_loads(e->a, r, rank) && identity_loads(e->b, r, rank) && identity_loads(e->c, r, rank);
}

}  // namespace

const PlannedBuffer* MemoryPlan::buffer_of(int comp) const {
  for (const auto& b : buffers)
    if (b.comp == comp) return &b;
  return nullptr;
}

MemoryPlan plan_memory(const FusedProgram& p, bool gemm_epilogues) {
  const auto& comps = p.program.comps;
  const int steps = static_cast<int>(p.steps.size());
  MemoryPlan plan;
  plan.alloc_before.assign(p.steps.size(), {});
  plan.free_after.assign(p.steps.size(), {});
  std::vector<int> first(comps.size(), -1), last(comps.size(), -1);
  std::set<int> outputs(p.program.outputs.begin(), p.program.outputs.end());
  auto outputs_of = [&](int c) { return outputs.count(c) > 0; };
  // c is made before step `from` and written by step `s` (from < s for a GEMM epilogue's kernel).
  auto written = [&](int c, int from, int s) {
    if (first[c] < 0) first[c] = from;
    last[c] = std::max(last[c], s);
  };
  for (int s = 0; s < steps; ++s) {
    const auto& step = p.steps[static_cast<size_t>(s)];
    std::set<int> reads;
    if (step.kind == Step::Kind::Kernel) {
      const auto& k = p.kernels[static_cast<size_t>(step.index)];
      // A kernel right after an extern may be launched from inside it (a GEMM epilogue): its
      // buffers exist from the extern's step on.
      const bool after_extern =
          gemm_epilogues && s > 0 && p.steps[static_cast<size_t>(s - 1)].kind == Step::Kind::Extern;
      for (int c : k.comps) {
        if (!p.realized[static_cast<size_t>(c)]) continue;
        written(c, after_extern ? s - 1 : s, s);
        lowering::collect_loads(comps[static_cast<size_t>(c)].body, reads);
      }
      for (int c : k.comps) reads.erase(c);
    } else {
      written(step.index, s, s);
      const auto& c = comps[static_cast<size_t>(step.index)];
      reads.insert(c.deps.begin(), c.deps.end());
      for (int o : c.operands)
        if (o >= 0) reads.insert(o);
    }
    // A view that is another computation's buffer permuted (buffer_views) keeps that buffer alive.
    for (int c : std::set<int>(reads))
      if (const int src = view_source(p, c); src >= 0) reads.insert(src);
    for (int c : reads)
      if (c >= 0 && static_cast<size_t>(c) < comps.size()) last[static_cast<size_t>(c)] = std::max(last[static_cast<size_t>(c)], s);
  }
  for (size_t c = 0; c < comps.size(); ++c) {
    if (first[c] < 0) continue;  // inputs, constants and inlined computations: not this region's buffers
    PlannedBuffer b;
    b.comp = static_cast<int>(c);
    b.first = first[c];
    b.output = outputs.count(static_cast<int>(c)) > 0;
    b.last = b.output ? steps : std::max(last[c], first[c]);
    plan.buffers.push_back(b);
  }
  // In place: a pointwise kernel's result may take the memory of a buffer it reads that dies in
  // that very kernel, when it is the only computation of the kernel reading it and reads it only
  // at the element's own position (each element is read before the same element is written). In a
  // row kernel, a stage (row_stage: its element in the kernel's variables) may take a buffer that
  // only reductions before it read besides (they have read the row before the stage writes it:
  // a barrier ends each reduction), a layer norm's output taking its residual sum's memory.
  std::map<int, int> in_place;  // result computation → the buffer whose memory it takes
  {
    std::map<int, int> step_of_kernel;
    for (int s = 0; s < steps; ++s)
      if (p.steps[static_cast<size_t>(s)].kind == Step::Kind::Kernel) step_of_kernel[p.steps[static_cast<size_t>(s)].index] = s;
    auto row_major = [&](const Comp& c) {
      for (size_t d = 0; d < c.layout.size(); ++d)
        if (c.layout[d] != static_cast<int>(d)) return false;
      return true;
    };
    for (const auto& [k_index, s] : step_of_kernel) {
      const auto& k = p.kernels[static_cast<size_t>(k_index)];
      const bool row = k.kind == FusedKernel::Kind::Row;
      std::vector<std::set<int>> reads(k.comps.size());  // what each of the kernel's computations loads
      for (size_t j = 0; j < k.comps.size(); ++j) lowering::collect_loads(comps[static_cast<size_t>(k.comps[j])].body, reads[j]);
      std::set<int> taken;
      for (size_t at = 0; at < k.comps.size(); ++at) {
        const int c = k.comps[at];
        const Comp& cc = comps[static_cast<size_t>(c)];
        if (!p.realized[static_cast<size_t>(c)] || outputs_of(c) || cc.kind != Comp::Kind::Pointwise) continue;
        const RowStage st = row ? row_stage(p.program, k, c) : RowStage{{}, cc.body, {}};
        const bool folded = row && k.folded.count(c);
        std::set<int> loads;
        lowering::collect_loads(st.body, loads);
        for (int r : loads) {
          const Comp& rc = comps[static_cast<size_t>(r)];
          if (first[static_cast<size_t>(r)] < 0 || last[static_cast<size_t>(r)] != s || taken.count(r) || outputs_of(r))
            continue;
          // The other readers in this kernel: none, or (row kernels) reductions before this stage.
          bool alone = true;
          for (size_t j = 0; j < k.comps.size() && alone; ++j) {
            const int o = k.comps[j];
            if (o != c && reads[j].count(r) && !(row && j < at && comps[static_cast<size_t>(o)].kind == Comp::Kind::Reduction))
              alone = false;
          }
          if (!alone) continue;
          // Each element read at the very place it is written: the same sizes, or (a stage folding the
          // rows) the rows then the stage's loop, both row-major, as many bytes.
          bool same_place = false;
          if (!folded) {
            same_place = shape_key(rc) == shape_key(cc) && identity_loads(st.body, r, cc.sizes.size());
          } else if (rc.dtype == cc.dtype && row_major(rc) && row_major(cc) && rc.sizes.size() == k.outer.size() + st.inner.size()) {
            same_place = identity_loads(st.body, r, rc.sizes.size());
            for (size_t d = 0; d < rc.sizes.size() && same_place; ++d)
              same_place = capture::sym_str(rc.sizes[d]) ==
                           capture::sym_str(d < k.outer.size() ? k.outer[d] : st.inner[d - k.outer.size()]);
          }
          if (!same_place) continue;
          in_place[c] = r;
          taken.insert(r);
          break;
        }
      }
    }
  }
  // Slots: greedy in order of first use; a buffer takes the slot of equal shape freed longest ago.
  std::sort(plan.buffers.begin(), plan.buffers.end(),
            [](const PlannedBuffer& a, const PlannedBuffer& b) { return std::tie(a.first, a.comp) < std::tie(b.first, b.comp); });
  struct Slot {
    std::string key;
    int free_from;  // the step after its current buffer's last use
  };
  std::vector<Slot> slots;
  std::map<int, int> slot_of;
  for (auto& b : plan.buffers) {
    const std::string key = shape_key(comps[static_cast<size_t>(b.comp)]);
    int chosen = -1;
    auto inplace = in_place.find(b.comp);
    if (inplace != in_place.end() && slot_of.count(inplace->second)) {
      chosen = slot_of[inplace->second];
      b.in_place_of = inplace->second;
    }
    for (size_t i = 0; chosen < 0 && i < slots.size(); ++i)
      if (slots[i].key == key && slots[i].free_from <= b.first &&
          (chosen < 0 || slots[i].free_from < slots[static_cast<size_t>(chosen)].free_from))
        chosen = static_cast<int>(i);
    if (chosen < 0) {
      slots.push_back({key, 0});
      chosen = static_cast<int>(slots.size()) - 1;
    }
    b.slot = chosen;
    slot_of[b.comp] = chosen;
    // Free from the step after the last read: the last reader still needs it while it runs.
    slots[static_cast<size_t>(chosen)].free_from = b.output ? steps + 1 : b.last + 1;
    plan.alloc_before[static_cast<size_t>(b.first)].push_back(b.comp);
    if (!b.output) plan.free_after[static_cast<size_t>(b.last)].push_back(b.comp);
  }
  plan.slots = static_cast<int>(slots.size());
  // A buffer's memory is handed on only when the next buffer of its slot is one the runtime makes
  // (an extern's result comes from the extern) and is made right after this one's last use: held
  // across a later step, the memory would count in that step's peak, where eager has freed it.
  // Otherwise it goes back to the allocator at its last use (the caching allocator reuses it).
  for (size_t i = 0; i < plan.buffers.size(); ++i)
    for (size_t j = i + 1; j < plan.buffers.size(); ++j)
      if (plan.buffers[j].slot == plan.buffers[i].slot) {
        const auto kind = comps[static_cast<size_t>(plan.buffers[j].comp)].kind;
        const bool made_by_runtime = kind == lowering::Comp::Kind::Pointwise || kind == lowering::Comp::Kind::Reduction;
        plan.buffers[i].handed_on = made_by_runtime && !plan.buffers[i].output &&
                                    plan.buffers[j].first == plan.buffers[i].last + 1;
        break;
      }
  return plan;
}

int64_t buffer_bytes(const LoopProgram& program, int c, const std::map<std::string, int64_t>& bindings) {
  const auto& comp = program.comps.at(static_cast<size_t>(c));
  int64_t n = dtype_bytes(comp.dtype);
  for (const auto& s : comp.sizes) {
    auto v = capture::sym_eval(s, bindings);
    if (!v) return -1;
    n *= *v;
  }
  return n;
}

PlannedPeak planned_peak(const FusedProgram& p, const MemoryPlan& plan, const std::map<std::string, int64_t>& bindings) {
  PlannedPeak out;
  // A buffer holds its bytes from its creation to its last use; memory handed on goes straight to
  // the next buffer of the slot (made at the very next step), and a result written in place over a
  // buffer that dies in that kernel shares its memory there.
  std::vector<int64_t> sizes;
  for (const auto& b : plan.buffers) {
    const int64_t bytes = buffer_bytes(p.program, b.comp, bindings);
    if (bytes < 0) return {-1, -1, -1};
    out.unplanned += bytes;
    sizes.push_back(bytes);
  }
  for (size_t s = 0; s < p.steps.size(); ++s) {
    const int step = static_cast<int>(s);
    int64_t live = 0;
    for (size_t i = 0; i < plan.buffers.size(); ++i) {
      const auto& b = plan.buffers[i];
      if (b.first <= step && step <= b.last && !(b.in_place_of >= 0 && b.first == step)) live += sizes[i];
    }
    if (live > out.peak) {
      out.peak = live;
      out.step = step;
    }
  }
  return out;
}

std::string memory_plan_text(const FusedProgram& p, const MemoryPlan& plan, const std::map<std::string, int64_t>& bindings) {
  std::ostringstream os;
  const auto& comps = p.program.comps;
  auto peak = planned_peak(p, plan, bindings);
  os << "memory plan: " << plan.buffers.size() << " buffers in " << plan.slots << " slots; planned peak "
     << bytes_text(peak.peak) << (peak.step >= 0 ? " at step " + std::to_string(peak.step) : "") << " (every buffer at once: "
     << bytes_text(peak.unplanned) << ")\n";
  for (int sl = 0; sl < plan.slots; ++sl) {
    os << "  slot " << sl << ":";
    for (const auto& b : plan.buffers) {
      if (b.slot != sl) continue;
      const auto& c = comps[static_cast<size_t>(b.comp)];
      os << " " << c.name << " [" << b.first << ".." << (b.output ? std::string("out") : std::to_string(b.last)) << "]";
    }
    // Bytes of the slot's first buffer (equal shapes: equal bytes).
    for (const auto& b : plan.buffers)
      if (b.slot == sl) {
        os << "  " << bytes_text(buffer_bytes(p.program, b.comp, bindings));
        break;
      }
    os << "\n";
  }
  return os.str();
}

}  // namespace kiln::fusion
