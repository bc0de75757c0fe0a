#include "viewers/graph/graph_time.h"

#include <nlohmann/json.hpp>

namespace kiln::viewers {

namespace {

bool on_device(const session::TimelineEvent& e) { return e.lane.rfind("cuda:", 0) == 0; }

bool run_has_device_lanes(const session::Session& s, int run) {
  for (const auto& e : s.timeline)
    if (e.run == run && on_device(e)) return true;
  return false;
}

// Kernel and extern time of one run per compile id (events that name one).
std::map<std::string, double> region_time_ns(const session::Session& s, int run) {
  std::map<std::string, double> out;
  const bool device = run_has_device_lanes(s, run);
  for (const auto& e : s.timeline)
    if (e.run == run && !e.compile_id.empty() && (e.category == "kernel" || e.category == "extern") &&
        (!device || on_device(e)))
      out[e.compile_id] += static_cast<double>(e.dur_ns);
  return out;
}

double total(const std::map<std::string, double>& m) {
  double t = 0;
  for (const auto& [k, v] : m) t += v;
  return t;
}

}  // namespace

std::map<std::string, double> kernel_time_ns(const session::Session& s, int run, const std::string& compile_id) {
  std::map<std::string, double> cost;
  if (run < 0) return cost;
  const bool device = run_has_device_lanes(s, run);
  for (const auto& e : s.timeline)
    if (e.run == run && !e.kernel.empty() && (e.category == "kernel" || e.category == "extern") &&
        (!device || on_device(e)) && (e.compile_id.empty() || e.compile_id == compile_id))
      cost[e.kernel] += static_cast<double>(e.dur_ns);
  return cost;
}

int timed_run(const session::Session& s, int preferred, const std::string& compile_id) {
  auto timed = [&](int run) {
    return compile_id.empty() ? total(region_time_ns(s, run)) > 0 : total(kernel_time_ns(s, run, compile_id)) > 0;
  };
  if (preferred >= 0 && timed(preferred)) return preferred;
  for (const auto& r : s.runs)
    if (r.id != preferred && timed(r.id)) return r.id;
  return -1;
}

std::map<std::string, double> node_time_ns(const GraphModel& g, const std::map<std::string, std::string>& kernel_of,
                                           const std::map<std::string, double>& kernel_ns) {
  std::map<std::string, std::vector<const GraphNode*>> by_kernel, by_extern_op;
  for (const auto& n : g.nodes) {
    auto k = kernel_of.find(n.name);
    if (k != kernel_of.end()) by_kernel[k->second].push_back(&n);
    else if (n.op == "call_function" && !n.target.empty()) by_extern_op[n.target].push_back(&n);
  }
  std::map<std::string, double> out;
  auto split = [&](const std::map<std::string, std::vector<const GraphNode*>>& groups) {
    for (const auto& [key, nodes] : groups) {
      auto t = kernel_ns.find(key);
      if (t == kernel_ns.end() || t->second <= 0) continue;
      for (const auto* n : nodes) out[n->name] += t->second / static_cast<double>(nodes.size());
    }
  };
  split(by_kernel);
  split(by_extern_op);
  return out;
}

std::map<std::string, double> box_time_share(const GraphModel& g, const std::set<std::string>& collapsed,
                                             const std::map<std::string, double>& node_ns) {
  std::map<std::string, double> out;
  double sum = 0;
  for (const auto& n : g.nodes) {
    auto t = node_ns.find(n.name);
    if (t == node_ns.end()) continue;
    out[box_of(n, collapsed)] += t->second;
    sum += t->second;
  }
  if (sum <= 0) return {};
  for (auto& [box, v] : out) v /= sum;
  return out;
}

int region_node_count(const session::CompiledRegion& r) {
  for (const auto& g : r.graphs) {
    if (g.json.empty()) continue;
    auto j = nlohmann::json::parse(g.json, nullptr, false);
    if (j.is_discarded() || !j.is_object()) continue;
    const auto& nodes = j.contains("graph") ? j["graph"]["nodes"] : j["nodes"];
    if (nodes.is_array()) return static_cast<int>(nodes.size());
  }
  if (r.graphs.empty()) return 0;
  const session::StageGraph* code = &r.graphs.front();
  for (const auto& g : r.graphs)
    if (g.text.find("def forward(") != std::string::npos) {
      code = &g;
      break;
    }
  int count = 0;
  const std::string& t = code->text;
  for (size_t at = 0; (at = t.find(" = ", at)) != std::string::npos; at += 3) ++count;
  return count;
}

std::string slowest_region(const session::Session& s, int run) {
  if (s.regions.empty()) return "";
  int timed = timed_run(s, run, "");
  if (timed >= 0) {
    auto times = region_time_ns(s, timed);
    std::string best;
    double most = -1;
    for (const auto& r : s.regions) {  // session order breaks ties
      auto t = times.find(r.compile_id);
      if (t != times.end() && t->second > most) {
        most = t->second;
        best = r.compile_id;
      }
    }
    if (!best.empty()) return best;
  }
  const session::CompiledRegion* largest = &s.regions.front();
  int most = -1;
  for (const auto& r : s.regions) {
    int n = region_node_count(r);
    if (n > most) {
      most = n;
      largest = &r;
    }
  }
  return largest->compile_id;
}

}  // namespace kiln::viewers
