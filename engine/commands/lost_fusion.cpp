// Lost fusion across graph breaks, checked against Kiln's scheduler and measured; see lost_fusion.h.
#include "engine/commands/lost_fusion.h"


#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "engine/backends/builtin.h"
#include "engine/base/error.h"
#include "engine/capture/what_if.h"
#include "engine/model/model_impl.h"
#include "engine/profile/host_trace.h"
#include "engine/runtime/captured_runtime.h"
#include "engine/runtime/example_inputs.h"
#include "engine/model/scoped_print_handler.h"

namespace kiln::runtime {

namespace {

// A kernel of one program: "name [r/k]".
std::string kernel_key(const records::Kernel& k) { return k.name + " " + k.compile_id; }

// A graph node as both programs know it: its op and where the user wrote it. Node names differ
// between the two captures; ops and source positions do not.
std::string node_key(const ir::Node& n) {
  return n.target + "@" + n.loc.file + ":" + std::to_string(n.loc.line) + ":" + std::to_string(n.loc.col);
}

struct ProgramKernel {
  std::string key;
  int region = -1;
  std::set<std::string> nodes;  // node keys it computes
};

// Every generated kernel of the program with the nodes it computes, and each region's node keys.
struct Kernels {
  std::vector<ProgramKernel> kernels;
  std::map<int, std::set<std::string>> region_nodes;
};

Kernels kernels_of(const CapturedRuntime& rt) {
  Kernels out;
  for (const auto& info : rt.regions()) {
    const auto& arts = rt.artifacts(info.index);
    for (size_t e = 0; e < info.entries.size(); ++e) {
      std::map<std::string, std::string> by_name;
      for (const auto& n : info.entries[e].graph.nodes) {
        if (n.op != ir::NodeOp::CallFunction || !n.loc.known()) continue;
        by_name.emplace(n.name(), node_key(n));
        out.region_nodes[info.index].insert(node_key(n));
      }
      if (e >= arts.size()) continue;
      for (const auto& k : arts[e].kernels) {
        ProgramKernel pk{kernel_key(k), info.index, {}};
        for (const auto& name : k.nodes)
          if (auto it = by_name.find(name); it != by_name.end()) pk.nodes.insert(it->second);
        out.kernels.push_back(std::move(pk));
      }
    }
  }
  return out;
}

bool meets(const std::set<std::string>& a, const std::set<std::string>& b) {
  for (const auto& x : a)
    if (b.count(x)) return true;
  return false;
}

// One program being timed.
struct Timed {
  std::unique_ptr<CapturedRuntime> rt;
  std::map<std::string, std::vector<double>> kernel_ns;  // per kernel key: its time in each pass
};

void timed_pass(Timed& t, const std::vector<std::vector<at::Tensor>>& inputs) {
  profile::HostTrace trace;
  std::ostringstream sink;
  for (const auto& x : inputs) t.rt->run(x, &sink);
  std::map<std::string, double> pass;
  for (const auto& s : trace.spans())
    if (s.category == "kernel" && !s.kernel.empty()) pass[s.kernel + " " + s.compile_id] += static_cast<double>(s.dur_ns);
  for (const auto& [k, ns] : pass) t.kernel_ns[k].push_back(ns);
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Milliseconds per call of `keys` in `t` over `passes` passes of `calls` calls (a kernel absent from
// a pass ran 0 ns in it).
double time_of(const Timed& t, const std::vector<std::string>& keys, int passes, size_t calls) {
  double total = 0;
  for (const auto& k : keys) {
    auto it = t.kernel_ns.find(k);
    if (it == t.kernel_ns.end()) continue;
    auto v = it->second;
    v.resize(static_cast<size_t>(passes), 0.0);
    total += median(v);
  }
  return total / 1e6 / static_cast<double>(calls);
}

// One break whose regions join: the joined program and what fuses across.
struct Join {
  size_t site = 0;
  Timed joined;
  std::vector<std::string> before, after;
};

}  // namespace

std::string LostFusion::text() const {
  std::string out;
  for (const auto& f : fused) {
    if (!out.empty()) out += "; ";
    for (size_t i = 0; i < f.before.size(); ++i) out += (i ? " + " : "") + f.before[i];
    out += " -> " + f.fused;
  }
  return out;
}

std::vector<LostFusion> measure_lost_fusion(const model::Model& model, const std::vector<std::vector<InputSpec>>& calls,
                                            const capture::CompileOptions& options, int rounds, uint64_t seed) {
  backends::register_builtin_backends();
  if (calls.empty()) throw Error(model.path() + ": no inputs given (pass --input at least once)");
  if (rounds < 1) throw Error("lost fusion: rounds " + std::to_string(rounds) + ": must be at least 1");
  model::ScopedPrintHandler quiet;
  torch::NoGradGuard no_grad;

  capture::CompileOptions o = options;
  o.backend = "kiln";  // the scheduler asked is Kiln's own
  o.fullgraph = false;
  o.disable = false;
  std::vector<std::vector<at::Tensor>> inputs;
  for (size_t i = 0; i < calls.size(); ++i) inputs.push_back(make_inputs(calls[i], seed == 0 ? 0 : seed + i));

  Timed base;
  base.rt = std::make_unique<CapturedRuntime>(model, o);
  const auto& part = base.rt->partition();
  std::vector<LostFusion> out;
  for (const auto& b : part.breaks) {
    LostFusion l;
    l.info = b;
    out.push_back(std::move(l));
  }
  if (part.breaks.empty()) return out;
  if (model.device() != "cpu") {
    for (auto& l : out)
      l.unmeasured = "kernel times are taken on the CPU target; this model runs on " + model.device();
    return out;
  }
  std::ostringstream sink;
  for (const auto& x : inputs) base.rt->run(x, &sink);  // every region compiled (warm-up)
  const Kernels before = kernels_of(*base.rt);

  const capture::WhatIfExamples examples{model.impl->frozen._ivalue(), inputs};
  auto plan = capture::plan_break_removals(*model.impl->graph, part, examples);
  capture::SourceFiles sources;
  std::vector<Join> joins;
  for (size_t i = 0; i < part.breaks.size(); ++i) {
    auto& l = out[i];
    const auto& b = part.breaks[i];
    if (b.ends_region < 0 || b.resumes_region < 0) {
      l.unmeasured = "the break does not stand between two compiled regions";
      continue;
    }
    if (!before.region_nodes.count(b.ends_region) || !before.region_nodes.count(b.resumes_region)) {
      l.unmeasured = "a region next to the break never ran on these inputs";
      continue;
    }
    if (!plan[i].removable()) {
      l.unmeasured = "the regions cannot be joined: " + plan[i].why_not;
      continue;
    }
    if (plan[i].kind == capture::BreakRemoval::Kind::BranchAsWhere) {
      l.unmeasured =
          "data-dependent control flow: the regions join only by running both branches, which is other work "
          "than either branch's kernels";
      continue;
    }
    Join j;
    j.site = i;
    try {
      auto impl = std::make_shared<model::LoadedModel>(*model.impl);
      impl->graph = capture::remove_breaks(*model.impl->graph, sources, {static_cast<int>(i)}, examples);
      model::Model joined;
      joined.impl = impl;
      j.joined.rt = std::make_unique<CapturedRuntime>(joined, o);
      for (const auto& x : inputs) j.joined.rt->run(x, &sink);
    } catch (const std::exception& e) {
      std::string what = e.what();
      l.unmeasured = "the joined regions failed to compile or run: " + what.substr(0, what.find('\n'));
      continue;
    }
    // Node positions both regions hold say nothing about which side a kernel's work came from.
    const auto& a_nodes = before.region_nodes.at(b.ends_region);
    const auto& b_nodes = before.region_nodes.at(b.resumes_region);
    std::set<std::string> a_only, b_only;
    for (const auto& n : a_nodes)
      if (!b_nodes.count(n)) a_only.insert(n);
    for (const auto& n : b_nodes)
      if (!a_nodes.count(n)) b_only.insert(n);
    const Kernels after = kernels_of(*j.joined.rt);
    std::set<std::string> across;  // nodes of the kernels that fuse across
    for (const auto& k : after.kernels) {
      if (!meets(k.nodes, a_only) || !meets(k.nodes, b_only)) continue;
      FusedAcross f;
      f.fused = k.key;
      for (const auto& s : before.kernels)
        if ((s.region == b.ends_region || s.region == b.resumes_region) && meets(s.nodes, k.nodes))
          f.before.push_back(s.key);
      across.insert(k.nodes.begin(), k.nodes.end());
      l.fused.push_back(std::move(f));
    }
    l.measured = true;
    if (l.fused.empty()) continue;
    // The kernels compared cover the same nodes on both sides: grown from the fused kernels' nodes
    // until every kernel that computes one of them is in.
    std::set<std::string> covered = across;
    for (size_t size = 0; size != covered.size();) {
      size = covered.size();
      j.before.clear();
      j.after.clear();
      for (const auto& s : before.kernels)
        if ((s.region == b.ends_region || s.region == b.resumes_region) && meets(s.nodes, covered)) {
          j.before.push_back(s.key);
          covered.insert(s.nodes.begin(), s.nodes.end());
        }
      for (const auto& k : after.kernels)
        if (meets(k.nodes, covered)) {
          j.after.push_back(k.key);
          covered.insert(k.nodes.begin(), k.nodes.end());
        }
    }
    l.compared_before = j.before;
    l.compared_after = j.after;
    joins.push_back(std::move(j));
  }
  if (joins.empty()) return out;

  // Timed: the programs take turns within every pass, so drift in the machine's speed falls on all.
  for (int round = 0; round < rounds; ++round) {
    timed_pass(base, inputs);
    for (auto& j : joins) timed_pass(j.joined, inputs);
  }
  for (const auto& j : joins) {
    auto& l = out[j.site];
    l.before_ms = time_of(base, j.before, rounds, inputs.size());
    l.after_ms = time_of(j.joined, j.after, rounds, inputs.size());
    l.lost_ms = l.before_ms - l.after_ms;
  }
  return out;
}

void apply_lost_fusion(std::vector<session::BreakCost>& costs, const std::vector<LostFusion>& lost) {
  for (auto& c : costs) {
    for (const auto& l : lost) {
      if (l.info.id != c.break_id || l.info.reason != c.reason || l.info.loc.file != c.file || l.info.loc.line != c.line)
        continue;
      c.lost_fusion_checked = true;
      c.lost_fusion = l.text();
      c.lost_fusion_ms = l.measured ? l.lost_ms : 0;
      c.lost_fusion_unmeasured = l.measured ? "" : l.unmeasured;
      if (c.unmeasured.empty()) {
        c.total_ms = c.gap_ms + c.guard_ms + c.lost_fusion_ms;
        c.share = c.step_ms > 0 ? c.total_ms / c.step_ms : 0;
      }
      break;
    }
  }
  std::stable_sort(costs.begin(), costs.end(), [](const auto& a, const auto& b) { return a.total_ms > b.total_ms; });
}

}  // namespace kiln::runtime
