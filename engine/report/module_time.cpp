// Device time by module path and source line; see module_time.h.
#include "engine/report/module_time.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "engine/importers/torch_trace/fx_readable.h"
#include "engine/report/gpu_kernel_stats.h"

namespace kiln::report {

namespace {

bool device_lane(const std::string& lane) { return lane.rfind("cuda:", 0) == 0 || lane.rfind("gpu", 0) == 0; }

std::vector<std::string> components(const std::string& path) {
  std::vector<std::string> out;
  if (path.empty()) return out;
  std::string cur;
  for (char c : path) {
    if (c == '.') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

std::string common_module(const std::string& a, const std::string& b) {
  auto x = components(a), y = components(b);
  std::string out;
  for (size_t i = 0; i < x.size() && i < y.size() && x[i] == y[i]; ++i) out += (i ? "." : "") + x[i];
  return out;
}

std::string base_name(const std::string& file) {
  size_t slash = file.find_last_of("/\\");
  return slash == std::string::npos ? file : file.substr(slash + 1);
}

// Where one graph node sits in the model.
struct NodePlace {
  std::string module;
  bool module_known = false;
  std::string line_key;  // "file.py:12"; "" unknown
  std::string code;
};
using NodeMap = std::unordered_map<std::string, NodePlace>;

void collect_refs(const nlohmann::json& a, std::vector<std::string>& out) {
  if (a.is_object() && a.contains("ref") && a["ref"].is_string()) out.push_back(a["ref"].get<std::string>());
  else if (a.is_array())
    for (const auto& x : a) collect_refs(x, out);
}

std::string str_of(const nlohmann::json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

void read_nodes(const nlohmann::json& nodes, bool modules_complete, std::map<std::string, std::string>& owners,
                NodeMap& out) {
  if (!nodes.is_array()) return;
  for (const auto& n : nodes) {
    if (!n.is_object()) continue;
    const std::string op = str_of(n, "op"), name = str_of(n, "name");
    std::string module = str_of(n, "module");
    if (op == "get_attr" && !module.empty()) owners[name] = module;
    NodePlace p;
    p.module = module;
    p.module_known = modules_complete || !module.empty();
    if (!p.module_known && n.contains("args")) {
      // An imported node: the module that owns the parameters it reads.
      std::vector<std::string> refs;
      collect_refs(n["args"], refs);
      bool first = true;
      for (const auto& r : refs) {
        auto it = owners.find(r);
        if (it == owners.end()) continue;
        p.module = first ? it->second : common_module(p.module, it->second);
        first = false;
        p.module_known = true;
      }
    }
    if (n.contains("source") && n["source"].is_object()) {
      const auto& src = n["source"];
      int line = src.contains("line") && src["line"].is_number_integer() ? src["line"].get<int>() : 0;
      std::string file = str_of(src, "file");
      if (line > 0 && !file.empty()) {
        p.line_key = base_name(file) + ":" + std::to_string(line);
        p.code = str_of(src, "text");
      }
    }
    if (!name.empty() && op != "output") out.emplace(name, p);
    if (n.contains("blocks") && n["blocks"].is_array())
      for (const auto& b : n["blocks"])
        if (b.is_object() && b.contains("nodes")) read_nodes(b["nodes"], modules_complete, owners, out);
  }
}

int stage_rank(const std::string& stage) {
  if (stage == "captured") return 0;
  if (stage == "dynamo_output_graph") return 1;
  return 2;
}

// The nodes of every graph of the region entry `compile_id`, the captured / Dynamo graph first.
NodeMap node_places(const session::Session& s, const std::string& compile_id, bool modules_complete) {
  NodeMap out;
  for (const auto& r : s.regions) {
    if (r.compile_id != compile_id) continue;
    std::vector<const session::StageGraph*> graphs;
    for (const auto& g : r.graphs) graphs.push_back(&g);
    std::stable_sort(graphs.begin(), graphs.end(),
                     [](const auto* a, const auto* b) { return stage_rank(a->stage) < stage_rank(b->stage); });
    for (const auto* g : graphs) {
      std::string json = g->json;
      if (json.empty() && !g->text.empty() && importers::looks_like_fx_readable(g->text))
        json = importers::fx_readable_json(g->text);
      if (json.empty()) continue;
      auto j = nlohmann::json::parse(json, nullptr, false);
      if (j.is_discarded() || !j.is_object() || !j.contains("nodes")) continue;
      std::map<std::string, std::string> owners;
      read_nodes(j["nodes"], modules_complete, owners, out);
    }
  }
  return out;
}

// "extern aten::linear -> linear" lines of each region entry's schedule, in launch order.
std::vector<std::pair<std::string, std::string>> extern_schedule(const session::Session& s, const std::string& compile_id) {
  static const std::regex line_re(R"(^extern (\S+) -> (\S+))");
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& r : s.regions) {
    if (r.compile_id != compile_id) continue;
    for (const auto& g : r.graphs) {
      if (g.stage != "loops_after_fusion") continue;
      std::istringstream in(g.text);
      for (std::string l; std::getline(in, l);) {
        std::smatch m;
        if (l.size() < 400 && std::regex_search(l, m, line_re)) out.push_back({m[1].str(), m[2].str()});
      }
      return out;
    }
  }
  return out;
}

// Each extern span of the run → the graph node its call computes: the k-th call of an op in one region
// call is the k-th "extern OP" line of the region's schedule (counted per op, so an extern the runtime
// issues ahead of the schedule's order, as a gather of token ids can be, does not shift the others).
std::unordered_map<const session::TimelineEvent*, std::string> extern_nodes(const session::Session& s, int run) {
  std::vector<const session::TimelineEvent*> spans;
  for (const auto& e : s.timeline)
    if (e.run == run && !device_lane(e.lane) && (e.category == "region" || e.category == "extern")) spans.push_back(&e);
  std::stable_sort(spans.begin(), spans.end(), [](const auto* a, const auto* b) { return a->start_ns < b->start_ns; });
  // compile id → op → the nodes of its extern calls, in schedule order
  std::map<std::string, std::map<std::string, std::vector<std::string>>> schedules;
  std::map<std::pair<std::string, std::string>, size_t> next;
  std::unordered_map<const session::TimelineEvent*, std::string> out;
  for (const auto* e : spans) {
    if (e->category == "region") {
      next.clear();
      continue;
    }
    auto it = schedules.find(e->compile_id);
    if (it == schedules.end()) {
      std::map<std::string, std::vector<std::string>> by_op;
      for (auto& [op, node] : extern_schedule(s, e->compile_id)) by_op[op].push_back(node);
      it = schedules.emplace(e->compile_id, std::move(by_op)).first;
    }
    auto op = it->second.find(e->name);
    if (op == it->second.end()) continue;
    size_t k = next[{e->compile_id, e->name}]++;
    if (k < op->second.size()) out[e] = op->second[k];
  }
  return out;
}

// An imported run's extern calls: Inductor's generated module calls cuBLAS and cuDNN through
// `extern_kernels.mm(...)`, `extern_kernels.convolution(...)` or an ATen op directly
// (`torch.ops.aten.NAME.default(...)`), each under a "# Topologically Sorted Source Nodes: [...]"
// comment naming its graph nodes; the profiler shows each as the host op "aten::NAME". The calls are
// matched to those ops in order within each call of the compiled region (the extern_schedule way),
// and a device record launched inside one of them is that call's.
struct InductorExtern {
  std::string op;  // "mm", "convolution"
  std::vector<std::string> nodes;
};

std::vector<InductorExtern> inductor_extern_schedule(const session::Session& s, const std::string& compile_id) {
  static const std::regex comment_re(R"(# Topologically Sorted Source Nodes: \[([^\]]*)\])");
  static const std::regex call_re(R"((?:extern_kernels\.|torch\.ops\.aten\.)(\w+)\()");
  std::vector<InductorExtern> out;
  for (const auto& k : s.kernels) {
    if (k.compile_id != compile_id || k.language != "python") continue;
    size_t at = k.source.find("def call(");
    if (at == std::string::npos) continue;
    std::istringstream in(k.source.substr(at));
    std::vector<std::string> nodes;
    for (std::string l; std::getline(in, l);) {
      if (l.size() > 4000) continue;
      std::smatch m;
      if (std::regex_search(l, m, comment_re)) {
        nodes.clear();
        std::stringstream names(m[1].str());
        for (std::string n; std::getline(names, n, ',');) {
          n.erase(0, n.find_first_not_of(' '));
          n.erase(n.find_last_not_of(' ') + 1);
          if (!n.empty()) nodes.push_back(n);
        }
        continue;
      }
      if (l.find("extern_kernels.") == std::string::npos && l.find("torch.ops.aten.") == std::string::npos) continue;
      if (std::regex_search(l, m, call_re)) out.push_back({m[1].str(), nodes});
    }
    break;
  }
  return out;
}

struct ExternCall {
  const session::TimelineEvent* span;  // the host op "aten::NAME"
  std::vector<std::string> nodes;
  std::string compile_id;
};

// Per host lane, the extern calls of compiled regions in the run, sorted by start and not nested.
std::map<std::string, std::vector<ExternCall>> imported_extern_calls(const session::Session& s, int run) {
  std::map<std::string, std::vector<const session::TimelineEvent*>> by_lane;
  for (const auto& e : s.timeline)
    if (e.run == run && !device_lane(e.lane) && (e.category == "region" || e.category == "cpu_op"))
      by_lane[e.lane].push_back(&e);
  std::map<std::string, std::vector<InductorExtern>> schedules;
  std::map<std::string, std::vector<ExternCall>> out;
  for (auto& [lane, events] : by_lane) {
    std::stable_sort(events.begin(), events.end(), [](const auto* a, const auto* b) { return a->start_ns < b->start_ns; });
    const session::TimelineEvent* region = nullptr;
    const std::vector<InductorExtern>* schedule = nullptr;
    size_t next = 0;
    int64_t inside_until = -1;  // the end of the extern call being read: ops inside it are its own
    for (const auto* e : events) {
      if (e->category == "region") {
        region = e;
        auto it = schedules.find(e->compile_id);
        if (it == schedules.end()) it = schedules.emplace(e->compile_id, inductor_extern_schedule(s, e->compile_id)).first;
        schedule = &it->second;
        next = 0;
        inside_until = -1;
        continue;
      }
      if (!region || e->start_ns >= region->start_ns + region->dur_ns || e->start_ns < inside_until) continue;
      if (next >= schedule->size() || e->name.rfind("aten::", 0) != 0) continue;
      if (e->name.compare(6, std::string::npos, (*schedule)[next].op) != 0) continue;
      out[lane].push_back({e, (*schedule)[next].nodes, region->compile_id});
      ++next;
      inside_until = e->start_ns + e->dur_ns;
    }
  }
  return out;
}

// The extern call whose host op contains `span` (same lane), or null.
const ExternCall* extern_call_of(const std::map<std::string, std::vector<ExternCall>>& calls,
                                 const session::TimelineEvent* span) {
  auto it = calls.find(span->lane);
  if (it == calls.end()) return nullptr;
  const auto& v = it->second;
  auto after = std::upper_bound(v.begin(), v.end(), span->start_ns,
                                [](int64_t t, const ExternCall& c) { return t < c.span->start_ns; });
  if (after == v.begin()) return nullptr;
  const ExternCall& c = *(after - 1);
  return span->start_ns + span->dur_ns <= c.span->start_ns + c.span->dur_ns ? &c : nullptr;
}

}  // namespace

std::string parent_module(const std::string& path) {
  size_t dot = path.rfind('.');
  return dot == std::string::npos ? "" : path.substr(0, dot);
}

bool module_contains(const std::string& outer, const std::string& inner) {
  if (outer.empty()) return true;
  return inner == outer || (inner.size() > outer.size() && inner.compare(0, outer.size(), outer) == 0 &&
                            inner[outer.size()] == '.');
}

namespace {

// "layer2" < "layer10": runs of digits compare as numbers.
bool natural_less(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const bool da = std::isdigit(static_cast<unsigned char>(a[i])), db = std::isdigit(static_cast<unsigned char>(b[j]));
    if (da && db) {
      size_t ei = i, ej = j;
      while (ei < a.size() && std::isdigit(static_cast<unsigned char>(a[ei]))) ++ei;
      while (ej < b.size() && std::isdigit(static_cast<unsigned char>(b[ej]))) ++ej;
      std::string na = a.substr(i, ei - i), nb = b.substr(j, ej - j);
      na.erase(0, std::min(na.find_first_not_of('0'), na.size()));
      nb.erase(0, std::min(nb.find_first_not_of('0'), nb.size()));
      if (na.size() != nb.size()) return na.size() < nb.size();
      if (na != nb) return na < nb;
      i = ei;
      j = ej;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

}  // namespace

bool module_order(const std::string& a, const std::string& b) {
  auto x = components(a), y = components(b);
  for (size_t i = 0; i < x.size() && i < y.size(); ++i)
    if (x[i] != y[i]) return natural_less(x[i], y[i]);
  return x.size() < y.size();
}

int64_t ModuleTime::module_attributed_ns() const {
  int64_t t = 0;
  for (const auto& r : modules) t += r.unattributed ? 0 : r.total_ns;
  return t;
}

int64_t ModuleTime::line_attributed_ns() const {
  int64_t t = 0;
  for (const auto& r : lines) t += r.unattributed ? 0 : r.total_ns;
  return t;
}

ModuleTime module_time(const session::Session& s, int run) {
  KernelRecords recs = kernel_records(s, run);
  ModuleTime out;
  out.run = run;
  out.time_source = recs.time_source;
  out.iterations = recs.iterations;
  const bool modules_complete = s.origin.rfind("kiln", 0) == 0;  // Kiln's graphs know every node's module

  std::map<std::pair<std::string, std::string>, const session::Kernel*> kernel_of;
  std::map<std::string, const session::Kernel*> kernel_by_name;
  for (const auto& k : s.kernels) {
    kernel_of.emplace(std::make_pair(k.name, k.compile_id), &k);
    kernel_by_name.emplace(k.name, &k);
  }
  std::map<std::string, NodeMap> places;
  auto place_map = [&](const std::string& compile_id) -> const NodeMap& {
    auto it = places.find(compile_id);
    if (it == places.end()) it = places.emplace(compile_id, node_places(s, compile_id, modules_complete)).first;
    return it->second;
  };
  auto externs = extern_nodes(s, run);
  const auto imported_externs = modules_complete ? std::map<std::string, std::vector<ExternCall>>()
                                                 : imported_extern_calls(s, run);

  std::map<std::string, StructureRow> modules, lines;
  StructureRow no_module{kUnattributed, "", 0, 0, true}, no_line{kUnattributed, "", 0, 0, true};
  for (const auto& rec : recs.records) {
    const int64_t ns = rec.event->dur_ns;
    out.total_ns += ns;
    ++out.records;
    std::vector<std::string> nodes;
    std::string compile_id = rec.compile_id;
    if (rec.launcher == "extern" && rec.span) {
      auto it = externs.find(rec.span);
      if (it != externs.end()) {
        nodes.push_back(it->second);
        if (compile_id.empty()) compile_id = rec.span->compile_id;
      }
    } else if (!rec.launched_by.empty()) {
      const session::Kernel* k = nullptr;
      auto it = kernel_of.find({rec.launched_by, compile_id});
      if (it != kernel_of.end()) k = it->second;
      else if (compile_id.empty() || rec.launcher != "kiln kernel") {
        auto byname = kernel_by_name.find(rec.launched_by);
        if (byname != kernel_by_name.end() && (compile_id.empty() || byname->second->compile_id == compile_id))
          k = byname->second;
      }
      if (k) {
        nodes = k->nodes;
        compile_id = k->compile_id;
      }
    }
    if (nodes.empty() && rec.span && !imported_externs.empty()) {
      if (const ExternCall* call = extern_call_of(imported_externs, rec.span)) {
        nodes = call->nodes;
        compile_id = call->compile_id;
      }
    }
    const NodeMap* map = nodes.empty() ? nullptr : &place_map(compile_id);
    bool has_module = false;
    std::string module;
    std::vector<const NodePlace*> line_places;
    std::set<std::string> seen_lines;
    for (const auto& n : nodes) {
      auto it = map->find(n);
      if (it == map->end()) continue;
      const NodePlace& p = it->second;
      if (p.module_known) {
        module = has_module ? common_module(module, p.module) : p.module;
        has_module = true;
      }
      if (!p.line_key.empty() && seen_lines.insert(p.line_key).second) line_places.push_back(&p);
    }
    StructureRow& m = has_module ? modules[module] : no_module;
    if (has_module) m.key = module;
    m.total_ns += ns;
    ++m.records;
    if (line_places.empty()) {
      no_line.total_ns += ns;
      ++no_line.records;
    } else {
      const int64_t parts = static_cast<int64_t>(line_places.size());
      for (size_t i = 0; i < line_places.size(); ++i) {
        StructureRow& l = lines[line_places[i]->line_key];
        l.key = line_places[i]->line_key;
        if (l.code.empty()) l.code = line_places[i]->code;
        l.total_ns += ns / parts + (i == 0 ? ns % parts : 0);
        ++l.records;
      }
    }
  }
  for (auto& [_, r] : modules) out.modules.push_back(std::move(r));
  std::sort(out.modules.begin(), out.modules.end(),
            [](const StructureRow& a, const StructureRow& b) { return module_order(a.key, b.key); });
  if (no_module.records > 0) out.modules.push_back(no_module);
  for (auto& [_, r] : lines) out.lines.push_back(std::move(r));
  std::sort(out.lines.begin(), out.lines.end(), [](const StructureRow& a, const StructureRow& b) {
    return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.key < b.key;
  });
  if (no_line.records > 0) out.lines.push_back(no_line);
  return out;
}

ModuleTime module_time(session::SessionRows& rows, int run) {
  // The graphs and kernel sources (they grow with the compiled code) and the run's events that the
  // analysis reads, without their args, in memory; no other event.
  session::Session s;
  s.origin = rows.summary().origin;
  s.runs = rows.summary().runs;
  rows.each_region([&](const session::CompiledRegion& r) { s.regions.push_back(r); });
  rows.each_kernel([&](const session::Kernel& k) { s.kernels.push_back(k); });
  rows.each_event(run, false, [&](const session::TimelineEvent& e) {
    const bool read = e.category == "iteration" || e.category == "step" || e.category == "region" ||
                      e.category == "kernel" || e.category == "extern" || e.category == "cpu_op" ||
                      (e.correlation >= 0 && !device_lane(e.lane));
    if (!read) return;
    session::TimelineEvent kept = e;
    kept.args_json.clear();
    s.timeline.push_back(std::move(kept));
  });
  return module_time(s, run);
}

}  // namespace kiln::report
