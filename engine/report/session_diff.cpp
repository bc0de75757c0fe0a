// Two sessions compared; see session_diff.h.
#include "engine/report/session_diff.h"

#include <algorithm>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "engine/base/error.h"
#include "engine/importers/torch_trace/fx_readable.h"
#include "engine/report/break_groups.h"
#include "engine/report/gpu_kernel_stats.h"

namespace kiln::report {

namespace {

std::string base_name(const std::string& file) {
  size_t slash = file.find_last_of("/\\");
  return slash == std::string::npos ? file : file.substr(slash + 1);
}

DiffSide side_of(const session::Session& s, const std::string& label) {
  DiffSide d;
  d.label = label;
  d.origin = s.origin;
  d.model = s.model.path;
  d.torch_version = s.env.libtorch_version;
  d.device = !s.env.gpu.empty() ? s.env.gpu : s.origin.rfind("kiln", 0) == 0 ? "cpu" : "";
  return d;
}

std::vector<RunPair> pair_runs(const session::Session& a, const session::Session& b) {
  std::vector<RunPair> out;
  std::vector<bool> used(b.runs.size(), false);
  std::vector<int> partner(a.runs.size(), -1);
  for (int pass = 0; pass < 2; ++pass)
    for (size_t i = 0; i < a.runs.size(); ++i) {
      if (partner[i] >= 0) continue;
      for (size_t j = 0; j < b.runs.size(); ++j) {
        if (used[j] || a.runs[i].mode != b.runs[j].mode) continue;
        if (pass == 0 && a.runs[i].backend != b.runs[j].backend) continue;
        partner[i] = static_cast<int>(j);
        used[j] = true;
        break;
      }
    }
  for (size_t i = 0; i < a.runs.size(); ++i) {
    RunPair p;
    p.a = a.runs[i];
    if (partner[i] >= 0) p.b = b.runs[static_cast<size_t>(partner[i])];
    out.push_back(std::move(p));
  }
  for (size_t j = 0; j < b.runs.size(); ++j)
    if (!used[j]) out.push_back({std::nullopt, b.runs[j]});
  return out;
}

std::string break_where(const session::GraphBreakRecord& r) {
  return r.info.loc.known() ? base_name(r.info.loc.file) + ":" + std::to_string(r.info.loc.line) : "(no line)";
}

std::vector<BreakChange> diff_breaks(const session::Session& a, const session::Session& b) {
  std::vector<BreakChange> out;
  std::map<std::pair<std::string, std::string>, size_t> index;
  for (const auto& g : group_breaks(a.breaks)) {
    BreakChange c;
    c.change = Change::Removed;
    c.where = break_where(*g.first);
    c.reason = g.first->info.reason;
    c.module = g.first->info.module_path;
    c.hits_a = g.hits;
    auto key = std::make_pair(c.where, c.reason);
    auto it = index.find(key);
    if (it != index.end()) {
      out[it->second].hits_a += g.hits;
      continue;
    }
    index.emplace(key, out.size());
    out.push_back(std::move(c));
  }
  for (const auto& g : group_breaks(b.breaks)) {
    auto key = std::make_pair(break_where(*g.first), g.first->info.reason);
    auto it = index.find(key);
    if (it != index.end()) {
      auto& c = out[it->second];
      if (c.change == Change::Removed) c.change = Change::Both;
      c.hits_b += g.hits;
      continue;
    }
    BreakChange c;
    c.change = Change::Added;
    c.where = key.first;
    c.reason = key.second;
    c.module = g.first->info.module_path;
    c.hits_b = g.hits;
    index.emplace(key, out.size());
    out.push_back(std::move(c));
  }
  return out;
}

// The ops and inputs of the region's captured (Kiln) or Dynamo (imported) graph.
struct GraphSummary {
  std::string stage;
  std::map<std::string, int> ops;
  std::vector<std::pair<std::string, std::string>> inputs;  // name, "float32[4, 64]"
  int calls = 0;
};

std::string meta_text(const nlohmann::json& outputs) {
  if (!outputs.is_array() || outputs.empty() || !outputs[0].is_object() || !outputs[0].contains("meta")) return "?";
  const auto& m = outputs[0]["meta"];
  if (!m.is_object() || !m.contains("shape") || !m["shape"].is_array()) return m.is_object() && m.contains("type") ? m["type"].dump() : "?";
  std::string t = m.contains("dtype") && m["dtype"].is_string() ? m["dtype"].get<std::string>() : "";
  t += "[";
  bool first = true;
  for (const auto& d : m["shape"]) {
    t += (first ? "" : ", ") + (d.is_string() ? d.get<std::string>() : d.dump());
    first = false;
  }
  return t + "]";
}

void summarize_nodes(const nlohmann::json& nodes, GraphSummary& g, bool top) {
  if (!nodes.is_array()) return;
  for (const auto& n : nodes) {
    if (!n.is_object() || !n.contains("op") || !n["op"].is_string()) continue;
    const std::string op = n["op"].get<std::string>();
    if (op == "placeholder") {
      if (top) g.inputs.push_back({n.value("name", std::string()), meta_text(n.value("outputs", nlohmann::json()))});
    } else if (op != "get_attr" && op != "output") {
      std::string target = n.contains("target") && n["target"].is_string() ? n["target"].get<std::string>() : op;
      ++g.ops[group_op(target)];
      ++g.calls;
    }
    if (n.contains("blocks") && n["blocks"].is_array())
      for (const auto& b : n["blocks"])
        if (b.is_object() && b.contains("nodes")) summarize_nodes(b["nodes"], g, false);
  }
}

GraphSummary summarize(const session::CompiledRegion& r) {
  GraphSummary g;
  const session::StageGraph* chosen = nullptr;
  for (const char* stage : {"captured", "dynamo_output_graph"})
    for (const auto& sg : r.graphs)
      if (!chosen && sg.stage == stage) chosen = &sg;
  if (!chosen) return g;
  std::string json = chosen->json;
  if (json.empty() && importers::looks_like_fx_readable(chosen->text)) json = importers::fx_readable_json(chosen->text);
  auto j = nlohmann::json::parse(json, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("nodes")) return g;
  g.stage = chosen->stage;
  summarize_nodes(j["nodes"], g, true);
  return g;
}

std::vector<RegionChange> diff_regions(const session::Session& a, const session::Session& b, int& same) {
  std::vector<std::string> ids;
  std::map<std::string, const session::CompiledRegion*> ra, rb;
  for (const auto& r : a.regions)
    if (ra.emplace(r.compile_id, &r).second) ids.push_back(r.compile_id);
  for (const auto& r : b.regions)
    if (rb.emplace(r.compile_id, &r).second && !ra.count(r.compile_id)) ids.push_back(r.compile_id);
  std::vector<RegionChange> out;
  same = 0;
  for (const auto& id : ids) {
    RegionChange c;
    c.compile_id = id;
    const auto* x = ra.count(id) ? ra[id] : nullptr;
    const auto* y = rb.count(id) ? rb[id] : nullptr;
    c.in_a = x != nullptr;
    c.in_b = y != nullptr;
    std::set<std::string> ga, gb;
    if (x) {
      ga.insert(x->guards.begin(), x->guards.end());
      c.recompile_a = x->recompile_reason;
      c.guards_a = x->guards.size();
    }
    if (y) {
      gb.insert(y->guards.begin(), y->guards.end());
      c.recompile_b = y->recompile_reason;
      c.guards_b = y->guards.size();
    }
    if (x && y) {
      std::set_difference(gb.begin(), gb.end(), ga.begin(), ga.end(), std::back_inserter(c.guards_added));
      std::set_difference(ga.begin(), ga.end(), gb.begin(), gb.end(), std::back_inserter(c.guards_removed));
    }
    GraphSummary sa = x ? summarize(*x) : GraphSummary{}, sb = y ? summarize(*y) : GraphSummary{};
    c.graph_a = sa.stage;
    c.graph_b = sb.stage;
    c.ops_a = sa.calls;
    c.ops_b = sb.calls;
    if (x && y) {
      std::set<std::string> names;
      for (const auto& [op, _] : sa.ops) names.insert(op);
      for (const auto& [op, _] : sb.ops) names.insert(op);
      for (const auto& op : names) {
        int na = sa.ops.count(op) ? sa.ops[op] : 0, nb = sb.ops.count(op) ? sb.ops[op] : 0;
        if (na != nb) c.ops.push_back({op, na, nb});
      }
      if (!sa.stage.empty() && !sb.stage.empty())
        for (size_t i = 0; i < std::max(sa.inputs.size(), sb.inputs.size()); ++i) {
          InputShape in;
          in.name = i < sa.inputs.size() ? sa.inputs[i].first : sb.inputs[i].first;
          if (i < sb.inputs.size() && i < sa.inputs.size() && sb.inputs[i].first != in.name)
            in.name += " / " + sb.inputs[i].first;
          in.a = i < sa.inputs.size() ? sa.inputs[i].second : "";
          in.b = i < sb.inputs.size() ? sb.inputs[i].second : "";
          if (in.a != in.b) c.inputs.push_back(std::move(in));
        }
    }
    const bool differs = !(x && y) || c.recompile_a != c.recompile_b || !c.guards_added.empty() ||
                         !c.guards_removed.empty() || !c.ops.empty() || !c.inputs.empty();
    if (differs) out.push_back(std::move(c));
    else ++same;
  }
  return out;
}

std::string run_label(const session::Session& s, int run) {
  for (const auto& r : s.runs)
    if (r.id == run) return r.mode + " / " + r.backend;
  return "imported trace";
}

// The run of `s` with the mode and backend of `other`'s run `run` that recorded kernel time; -1 when none.
int same_run(const session::Session& s, const session::Session& other, int run) {
  const session::Run* want = nullptr;
  for (const auto& r : other.runs)
    if (r.id == run) want = &r;
  if (!want) return -1;
  for (const auto& r : s.runs)
    if (r.mode == want->mode && r.backend == want->backend && r.status == "ok" && kernel_stats(s, r.id).records > 0)
      return r.id;
  return -1;
}

StructureSide structure_side(const session::Session& s, const std::string& which, const std::string& label,
                             int preferred = -1) {
  StructureSide side;
  int run = -1;
  if (which.empty() && preferred >= 0) {
    run = preferred;
  } else if (!which.empty()) {
    try {
      run = find_run(s, which);
    } catch (const Error& e) {
      throw Error(label + ": " + e.what());
    }
  } else {
    run = report_run(s);
    if (run < 0 && !s.runs.empty()) return side;  // runs, none with kernel time
    if (run < 0 && s.timeline.empty()) return side;
  }
  side.time = module_time(s, run);
  side.present = side.time.records > 0;
  side.run_label = run_label(s, run);
  side.total_ms = side.time.per_iter_ms(side.time.total_ns);
  if (side.time.total_ns > 0) {
    side.module_coverage = static_cast<double>(side.time.module_attributed_ns()) / static_cast<double>(side.time.total_ns);
    side.line_coverage = static_cast<double>(side.time.line_attributed_ns()) / static_cast<double>(side.time.total_ns);
  }
  return side;
}

StructureDiff diff_structure(const session::Session& a, const session::Session& b, const DiffOptions& o) {
  StructureDiff d;
  d.a = structure_side(a, o.run_a, o.label_a.empty() ? "A" : o.label_a);
  // B's run like A's when B has one (default against default), else B's own choice.
  d.b = structure_side(b, o.run_b, o.label_b.empty() ? "B" : o.label_b,
                       d.a.present ? same_run(b, a, d.a.time.run) : -1);
  // Inclusive module times: each row's own time added to it and every module above it.
  std::map<std::string, std::pair<int64_t, int64_t>> incl;
  std::map<std::string, std::pair<bool, bool>> has;
  int64_t unattr_a = -1, unattr_b = -1;
  auto add = [&](const StructureSide& side, bool is_a) {
    if (!side.present) return;
    for (const auto& r : side.time.modules) {
      if (r.unattributed) {
        (is_a ? unattr_a : unattr_b) = r.total_ns;
        continue;
      }
      std::string m = r.key;
      while (true) {
        auto& v = incl[m];
        auto& h = has[m];
        (is_a ? v.first : v.second) += r.total_ns;
        (is_a ? h.first : h.second) = true;
        if (m.empty()) break;
        m = parent_module(m);
      }
    }
  };
  add(d.a, true);
  add(d.b, false);
  std::vector<std::string> keys;
  for (const auto& [k, _] : incl) keys.push_back(k);
  std::sort(keys.begin(), keys.end(), module_order);
  for (const auto& k : keys) {
    StructureLine l;
    l.key = k;
    l.depth = k.empty() ? 0 : static_cast<int>(std::count(k.begin(), k.end(), '.')) + 1;
    if (has[k].first) l.a_ms = d.a.time.per_iter_ms(incl[k].first);
    if (has[k].second) l.b_ms = d.b.time.per_iter_ms(incl[k].second);
    d.modules.push_back(std::move(l));
  }
  if (unattr_a >= 0 || unattr_b >= 0) {
    StructureLine l;
    l.key = kUnattributed;
    l.unattributed = true;
    if (unattr_a >= 0) l.a_ms = d.a.time.per_iter_ms(unattr_a);
    if (unattr_b >= 0) l.b_ms = d.b.time.per_iter_ms(unattr_b);
    d.modules.push_back(std::move(l));
  }
  // Lines: merged by key, the larger side first.
  std::map<std::string, StructureLine> lines;
  StructureLine unattributed;
  unattributed.key = kUnattributed;
  unattributed.unattributed = true;
  auto add_lines = [&](const StructureSide& side, bool is_a) {
    if (!side.present) return;
    for (const auto& r : side.time.lines) {
      StructureLine& l = r.unattributed ? unattributed : lines[r.key];
      l.key = r.key;
      if (l.code.empty()) l.code = r.code;
      (is_a ? l.a_ms : l.b_ms) = side.time.per_iter_ms(r.total_ns);
    }
  };
  add_lines(d.a, true);
  add_lines(d.b, false);
  for (auto& [_, l] : lines) d.lines.push_back(std::move(l));
  std::sort(d.lines.begin(), d.lines.end(), [](const StructureLine& x, const StructureLine& y) {
    double mx = std::max(x.a_ms, x.b_ms), my = std::max(y.a_ms, y.b_ms);
    return mx != my ? mx > my : x.key < y.key;
  });
  if (unattributed.a_ms >= 0 || unattributed.b_ms >= 0) d.lines.push_back(std::move(unattributed));
  return d;
}

}  // namespace

std::string group_op(const std::string& target) {
  std::string t = target;
  size_t colons = t.find("::");
  if (colons != std::string::npos) {
    t = t.substr(colons + 2);
    size_t dot = t.find('.');
    return dot == std::string::npos ? t : t.substr(0, dot);
  }
  for (const char* aten : {"torch.ops.aten.", "aten."}) {
    size_t at = t.find(aten);
    if (at != std::string::npos) {
      t = t.substr(at + std::string(aten).size());
      size_t dot = t.find('.');
      return dot == std::string::npos ? t : t.substr(0, dot);
    }
  }
  size_t dot = t.rfind('.');
  return dot == std::string::npos ? t : t.substr(dot + 1);
}

SessionDiff diff_sessions(const session::Session& a, const session::Session& b, const DiffOptions& options) {
  SessionDiff d;
  d.a = side_of(a, options.label_a.empty() ? "A" : options.label_a);
  d.b = side_of(b, options.label_b.empty() ? "B" : options.label_b);
  d.runs = pair_runs(a, b);
  d.breaks = diff_breaks(a, b);
  d.regions = diff_regions(a, b, d.regions_same);
  d.structure = diff_structure(a, b, options);
  return d;
}

}  // namespace kiln::report
