#include "viewers/graph/graph_compare.h"

namespace kiln::viewers {

namespace {

// Self time per module path, ms per iteration.
std::map<std::string, double> self_ms(const report::StructureSide& side) {
  std::map<std::string, double> out;
  if (!side.present) return out;
  for (const auto& r : side.time.modules)
    if (!r.unattributed) out[r.key] = side.time.per_iter_ms(r.total_ns);
  return out;
}

double find_or(const std::map<std::string, double>& m, const std::string& key) {
  auto it = m.find(key);
  return it == m.end() ? -1 : it->second;
}

}  // namespace

std::map<std::string, BoxTimeChange> box_time_change(const GraphModel& g, const std::set<std::string>& collapsed,
                                                     const report::StructureDiff& structure) {
  std::map<std::string, BoxTimeChange> out;
  if (!structure.a.present && !structure.b.present) return out;
  const auto a = self_ms(structure.a), b = self_ms(structure.b);
  std::map<std::string, const report::StructureLine*> inclusive;
  for (const auto& l : structure.modules)
    if (!l.unattributed) inclusive[l.key] = &l;
  // Scalar and shape arithmetic runs on the host, in no kernel: left out where the graph knows types.
  bool typed = false;
  for (const auto& n : g.nodes) typed |= n.tensor;
  for (const auto& n : g.nodes) {
    const std::string box = box_of(n, collapsed);
    if (out.count(box)) continue;
    BoxTimeChange c;
    if (box.rfind("module:", 0) == 0) {
      c.module = box.substr(7);
      c.inclusive = true;
      auto it = inclusive.find(c.module);
      if (it == inclusive.end()) continue;
      c.a_ms = it->second->a_ms;
      c.b_ms = it->second->b_ms;
    } else {
      if (n.op == "placeholder" || n.op == "output" || n.op == "get_attr" || (typed && !n.tensor)) continue;
      std::string m = n.module;
      for (;;) {
        if (a.count(m) || b.count(m)) break;
        if (m.empty()) break;
        m = report::parent_module(m);
      }
      c.module = m;
      c.a_ms = find_or(a, m);
      c.b_ms = find_or(b, m);
      if (c.a_ms < 0 && c.b_ms < 0) continue;
    }
    out[box] = c;
  }
  return out;
}

}  // namespace kiln::viewers
