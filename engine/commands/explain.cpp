#include "engine/commands/explain.h"

#include <map>
#include <nlohmann/json.hpp>
#include <sstream>


#include "engine/backends/builtin.h"
#include "engine/base/error.h"
#include "engine/base/json_text.h"
#include "engine/runtime/captured_runtime.h"
#include "engine/runtime/compare_values.h"
#include "engine/runtime/example_inputs.h"
#include "engine/runtime/float_precision.h"
#include "engine/model/scoped_print_handler.h"

namespace kiln::runtime {

namespace {

// Whether any tensor of a value lives on a GPU.
bool on_gpu(const c10::IValue& v) {
  if (v.isTensor()) return v.toTensor().defined() && v.toTensor().is_cuda();
  if (v.isTuple())
    for (const auto& e : v.toTupleRef().elements())
      if (on_gpu(e)) return true;
  if (v.isList())
    for (const auto& e : v.toListRef())
      if (on_gpu(e)) return true;
  return false;
}

}  // namespace

int ExplainResult::compiles() const {
  int n = 0;
  for (const auto& r : regions) n += static_cast<int>(r.entries.size());
  return n;
}

ExplainResult explain_model(const model::Model& model, const std::vector<std::vector<InputSpec>>& calls,
                            const CompileOptions& options, uint64_t seed) {
  backends::register_builtin_backends();
  if (calls.empty()) throw Error(model.path() + ": no inputs given (pass --input at least once)");
  auto names = model.forward_arg_names();
  ExplainResult r;
  r.model = model.path();
  r.exported_program = model.exported_program();
  CapturedRuntime rt(model, options);
  for (size_t call = 0; call < calls.size(); ++call) {
    const auto& specs = calls[call];
    if (specs.size() != names.size())
      throw Error(model.path() + ": forward takes " + std::to_string(names.size()) + " input(s), " +
                  std::to_string(specs.size()) + " given in one call");
    auto inputs = make_inputs(specs, seed == 0 ? 0 : seed + call);
    CallCheck check;
    check.inputs = specs;
    std::ostringstream printed;
    std::vector<c10::IValue> outs;
    try {
      outs = rt.run(inputs, &printed);
    } catch (const Error& e) {
      std::string shapes;
      for (const auto& s : specs) shapes += (shapes.empty() ? "" : ", ") + s.str();
      throw Error(model.path() + ": forward on inputs [" + shapes + "] failed: " + e.what());
    }
    std::vector<c10::IValue> args(inputs.begin(), inputs.end());
    torch::NoGradGuard g;
    // The reference run's print() output is the model's, already shown once: keep it quiet.
    c10::IValue ref;
    {
      model::ScopedPrintHandler quiet;
      ref = const_cast<torch::jit::Module&>(model.impl->module).forward(args);
    }
    // Bit for bit on the CPU: the one measure (runtime/compare_values.h) with zero tolerance. On a
    // GPU, cuBLAS and cuDNN may pick another algorithm or reduction order from one call to the next,
    // so two eager runs of the same ops can differ in the last bits: the dtype's tolerance rule.
    c10::IValue actual = outs.size() == 1 ? outs[0] : c10::IValue(c10::ivalue::Tuple::create(outs));
    double rtol = 0, atol = 0;
    bool scale_atol = false;
    if (on_gpu(ref)) {
      Tolerance t = tolerance_for(ref, tf32_in_effect(model));
      rtol = t.rtol;
      atol = t.atol;
      scale_atol = t.scale_atol;
      check.tolerance = t.str();
    }
    ValueError err = value_error(compare_values("output", actual, ref, rtol, atol, scale_atol));
    check.equal = err.ok;
    check.max_abs_diff = err.max_abs;
    std::istringstream lines(printed.str());
    for (std::string l; std::getline(lines, l);) check.printed.push_back(l);
    r.calls.push_back(std::move(check));
  }
  r.breaks = rt.partition().breaks;
  r.break_hits = rt.break_hits();
  r.regions = rt.regions();
  r.events = rt.events();
  return r;
}

namespace {

struct UniqueBreak {
  const GraphBreak* first;
  int count = 0;
  int sites = 0;
};

std::vector<UniqueBreak> dedupe(const ExplainResult& r) {
  std::vector<UniqueBreak> out;
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < r.breaks.size(); ++i) {
    const auto& b = r.breaks[i];
    std::string key = b.reason + "|" + b.loc.file + ":" + std::to_string(b.loc.line);
    auto it = index.find(key);
    if (it == index.end()) {
      index[key] = out.size();
      out.push_back({&b, 0, 0});
      it = index.find(key);
    }
    out[it->second].count += r.break_hits[i];
    out[it->second].sites += 1;
  }
  return out;
}

}  // namespace

std::string explain_text(const ExplainResult& r, bool timings) {
  std::ostringstream os;
  auto unique = dedupe(r);
  os << "model        " << r.model << "\n";
  os << "calls        " << r.calls.size() << "\n";
  os << "graphs       " << r.regions.size() << " region" << (r.regions.size() == 1 ? "" : "s") << ", "
     << r.compiles() << " compile" << (r.compiles() == 1 ? "" : "s") << "\n";
  os << "graph breaks " << r.breaks.size() << " (" << unique.size() << " unique)"
     << (r.exported_program && r.breaks.empty() ? ": an exported program (torch.export) is one graph by construction; "
                                                  "its guards are the input shapes below"
                                                : "")
     << "\n";
  if (!unique.empty()) {
    os << "\nGraph breaks (deduplicated)\n";
    int i = 1;
    for (const auto& u : unique) {
      const auto& b = *u.first;
      os << "  " << i++ << ". " << b.id << " " << break_category_info(b.category).name << " at "
         << (b.loc.known() ? b.loc.str() : "unknown line") << (b.module_path.empty() ? "" : " in " + b.module_path)
         << "  (hit " << u.count << "x)\n";
      if (!b.loc.text.empty()) os << "       " << b.loc.line << " | " << b.loc.text << "\n";
      os << "     reason: " << b.reason << "\n";
      os << "     hint:   " << b.hint << "\n";
      os << "     ends region " << (b.ends_region >= 0 ? std::to_string(b.ends_region) : std::string("-"))
         << ", resumes in region " << (b.resumes_region >= 0 ? std::to_string(b.resumes_region) : std::string("-"))
         << "\n";
    }
  }
  for (const auto& reg : r.regions) {
    os << "\nRegion " << reg.index;
    if (reg.first_loc.known()) os << " (from " << reg.first_loc.str() << ")";
    os << ": " << reg.ops.size() << " top-level op" << (reg.ops.size() == 1 ? "" : "s");
    if (reg.limit_reached) os << "  [RECOMPILE LIMIT REACHED: runs eagerly]";
    os << "\n";
    for (const auto& e : reg.entries) {
      os << "  " << e.compile_id << " hits " << e.hits << ", " << e.graph.call_nodes().size() << " ops";
      if (!e.recompile_reason.empty()) os << ", recompiled because: " << e.recompile_reason;
      os << "\n";
      os << "    ops: ";
      std::map<std::string, int> hist = e.graph.op_histogram();
      bool first = true;
      for (const auto& [op, n] : hist) {
        os << (first ? "" : ", ") << op << (n > 1 ? " x" + std::to_string(n) : "");
        first = false;
      }
      os << "\n";
      for (const auto& s : e.guards.symbols) os << "    symbol " << s << "\n";
      os << "    guards (" << e.guards.guards.size() << ", evaluated " << e.guards.evaluations << "x";
      if (timings && e.guards.evaluations > 0) os << ", " << (e.guards.eval_ns / e.guards.evaluations) << " ns each";
      os << "):\n";
      for (const auto& g : e.guards.guards) os << "      " << g.text << "\n";
    }
  }
  bool any = false;
  for (const auto& e : r.events) {
    if (e.kind != Event::Kind::Recompile && e.kind != Event::Kind::RecompileLimit) continue;
    if (!any) os << "\nRecompiles\n";
    any = true;
    os << "  call " << e.call << " " << e.compile_id << " " << e.message << "\n";
  }
  if (!any) os << "\nRecompiles: none\n";
  os << "\nCalls\n";
  for (size_t i = 0; i < r.calls.size(); ++i) {
    const auto& c = r.calls[i];
    std::string shapes;
    for (const auto& s : c.inputs) shapes += (shapes.empty() ? "" : ", ") + s.str();
    os << "  " << i << ": [" << shapes << "] output "
       << (!c.equal ? "DIFFERS from eager" : c.tolerance.empty() ? "equals eager exactly" : "equals eager within " + c.tolerance + " (GPU)")
       << " (max abs diff " << c.max_abs_diff << ")\n";
  }
  return os.str();
}

std::string explain_json(const ExplainResult& r) {
  using nlohmann::ordered_json;
  ordered_json j = {{"model", r.model},
                    {"exported_program", r.exported_program},
                    {"graph_count", r.regions.size()},
                    {"compile_count", r.compiles()},
                    {"break_count", r.breaks.size()}};
  auto loc = [](const ir::SourceLoc& l) {
    return ordered_json{{"file", l.file}, {"line", l.line}, {"col", l.col}, {"text", l.text}};
  };
  ordered_json breaks = ordered_json::array();
  for (size_t i = 0; i < r.breaks.size(); ++i) {
    const auto& b = r.breaks[i];
    breaks.push_back(ordered_json{{"id", b.id}, {"category", break_category_info(b.category).name}, {"op", b.op},
                                  {"reason", b.reason}, {"hint", b.hint}, {"source", loc(b.loc)},
                                  {"module", b.module_path}, {"ends_region", b.ends_region},
                                  {"resumes_region", b.resumes_region}, {"hits", r.break_hits[i]}});
  }
  j["graph_breaks"] = breaks;
  ordered_json regions = ordered_json::array();
  for (const auto& reg : r.regions) {
    ordered_json entries = ordered_json::array();
    for (const auto& e : reg.entries) {
      ordered_json guards = ordered_json::array();
      for (const auto& g : e.guards.guards) guards.push_back(g.text);
      entries.push_back(ordered_json{{"compile_id", e.compile_id}, {"hits", e.hits},
                                     {"recompile_reason", e.recompile_reason}, {"symbols", e.guards.symbols},
                                     {"guards", guards}, {"guard_evaluations", e.guards.evaluations},
                                     {"guard_eval_ns", e.guards.eval_ns}, {"ops", e.graph.op_histogram()},
                                     {"compile_ms", e.compile_ms}});
    }
    regions.push_back(ordered_json{{"index", reg.index}, {"ops", reg.ops}, {"limit_reached", reg.limit_reached},
                                   {"entries", entries}});
  }
  j["regions"] = regions;
  ordered_json events = ordered_json::array();
  for (const auto& e : r.events)
    events.push_back(ordered_json{{"t_ns", e.t_ns}, {"kind", capture::event_kind_name(e.kind)}, {"call", e.call},
                                  {"region", e.region}, {"compile_id", e.compile_id}, {"message", e.message}});
  j["events"] = events;
  ordered_json calls = ordered_json::array();
  for (const auto& c : r.calls) {
    ordered_json ins = ordered_json::array();
    for (const auto& s : c.inputs) ins.push_back(s.str());
    calls.push_back(ordered_json{{"inputs", ins}, {"equal", c.equal}, {"max_abs_diff", c.max_abs_diff},
                                 {"tolerance", c.tolerance.empty() ? "exact" : c.tolerance}});
  }
  j["calls"] = calls;
  return safe_dump(j, 2);
}

}  // namespace kiln::runtime
