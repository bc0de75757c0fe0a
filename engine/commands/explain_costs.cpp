// Measured costs of graph breaks and recompiles over explain's calls; see explain_costs.h.
#include "engine/commands/explain_costs.h"


#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "engine/backends/builtin.h"
#include "engine/base/error.h"
#include "engine/base/json_text.h"
#include "engine/commands/explain.h"
#include "engine/commands/lost_fusion.h"
#include "engine/profile/host_trace.h"
#include "engine/report/break_costs.h"
#include "engine/report/number_text.h"
#include "engine/report/recompile_costs.h"
#include "engine/report/recompile_history.h"
#include "engine/runtime/captured_runtime.h"
#include "engine/runtime/compare_values.h"
#include "engine/runtime/example_inputs.h"
#include "engine/model/scoped_print_handler.h"

namespace kiln::runtime {

namespace {

using session::TimelineEvent;

std::vector<TimelineEvent> host_events(const profile::HostTrace& trace, int run) {
  std::vector<TimelineEvent> out;
  for (const auto& s : trace.spans()) out.push_back(profile::timeline_event(s, run));
  return out;
}

bool inside(const profile::HostSpan& e, const profile::HostSpan& outer) {
  return e.thread == outer.thread && e.start_ns >= outer.start_ns && e.start_ns + e.dur_ns <= outer.start_ns + outer.dur_ns;
}

double ms(int64_t ns) { return static_cast<double>(ns) / 1e6; }

// One configuration run through the calls: a cold traced pass, then `rounds` warm passes.
struct Pass {
  std::unique_ptr<CapturedRuntime> rt;
  std::vector<c10::IValue> outputs;  // of the cold pass, one per call
  std::vector<RegionCost> regions;
  PassMeasure measure;
  std::vector<TimelineEvent> warm_timeline;
};

Pass run_pass(const model::Model& model, const std::vector<std::vector<at::Tensor>>& inputs,
              const capture::CompileOptions& options, int rounds) {
  Pass p;
  p.rt = std::make_unique<CapturedRuntime>(model, options);
  p.measure.dynamic = !options.dynamic.has_value() ? "auto" : *options.dynamic ? "true" : "false";
  std::ostringstream printed;
  {
    profile::HostTrace trace;
    for (const auto& x : inputs) {
      profile::Span it("iteration", "call");
      auto outs = p.rt->run(x, &printed);
      p.outputs.push_back(outs.size() == 1 ? outs[0] : c10::IValue(c10::ivalue::Tuple::create(outs)));
    }
    // Per region span: a span that captured (a recompile) or ran eagerly after the limit failed every
    // guard check in it; any other ran the entry whose check was its last, and the earlier ones failed.
    std::map<int, RegionCost> by_region;
    for (const auto& info : p.rt->regions()) {
      auto& rc = by_region[info.index];
      rc.region = info.index;
      rc.limit_reached = info.limit_reached;
      for (const auto& e : info.entries) rc.entries.push_back({e.compile_id, 0, e.hits, e.recompile_reason});
    }
    const auto& spans = trace.spans();
    for (const auto& s : spans) {
      if (s.category == "iteration") p.measure.cold_ms += ms(s.dur_ns);
      // The capture span holds the backend's compile span and the entry's first run: counted once.
      if (s.category == "capture")
        for (auto& [r, rc] : by_region)
          for (auto& e : rc.entries)
            if (e.compile_id == s.compile_id) {
              e.compile_ms += ms(s.dur_ns);
              rc.compile_ms += ms(s.dur_ns);
              p.measure.compile_ms += ms(s.dur_ns);
            }
      if (s.category != "region") continue;
      int region = std::stoi(s.name.substr(std::string("region ").size()));
      std::vector<const profile::HostSpan*> guards;
      bool captured = false, ran = false;
      for (const auto& c : spans) {
        if (&c == &s || !inside(c, s) || c.depth <= s.depth) continue;
        if (c.category == "guard") guards.push_back(&c);
        if (c.category == "capture") captured = true;
        if (c.category == "kernel" || c.category == "extern") ran = true;
      }
      auto& rc = by_region[region];
      rc.region = region;
      const bool fallback = rc.limit_reached && !captured && !ran;
      size_t failed = captured || fallback ? guards.size() : guards.empty() ? 0 : guards.size() - 1;
      for (size_t i = 0; i < failed; ++i) {
        rc.failed_guard_ms += ms(guards[i]->dur_ns);
        ++rc.failed_guard_checks;
      }
      if (fallback) {
        rc.eager_fallback_ms += ms(s.dur_ns);
        ++rc.eager_fallback_calls;
      }
    }
    for (auto& [r, rc] : by_region) {
      p.measure.compiles += static_cast<int>(rc.entries.size());
      p.measure.failed_guard_ms += rc.failed_guard_ms;
      p.measure.eager_fallback_ms += rc.eager_fallback_ms;
      p.regions.push_back(rc);
    }
  }
  profile::HostTrace trace;
  for (int round = 0; round < rounds; ++round)
    for (const auto& x : inputs) {
      profile::Span it("iteration", "call");
      p.rt->run(x, &printed);
    }
  int calls = 0;
  double total = 0;
  for (const auto& s : trace.spans())
    if (s.category == "iteration") {
      ++calls;
      total += ms(s.dur_ns);
    }
  p.measure.warm_call_ms = calls ? total / calls : 0;
  p.warm_timeline = host_events(trace, 0);
  return p;
}

// The captured program's breaks as session records, for report::measure_break_costs.
std::vector<session::GraphBreakRecord> break_records(const CapturedRuntime& rt) {
  std::vector<session::GraphBreakRecord> out;
  const auto& breaks = rt.partition().breaks;
  for (size_t i = 0; i < breaks.size(); ++i) {
    session::GraphBreakRecord b;
    b.info = breaks[i];
    b.hits = rt.break_hits()[i];
    out.push_back(std::move(b));
  }
  return out;
}

// What recompile_history reads: the events, and each entry's guards and reason.
session::Session history_session(const CapturedRuntime& rt) {
  session::Session s;
  s.events = rt.events();
  for (const auto& info : rt.regions())
    for (const auto& e : info.entries) {
      session::CompiledRegion cr;
      cr.compile_id = e.compile_id;
      cr.region = info.index;
      cr.recompile_reason = e.recompile_reason;
      for (const auto& g : e.guards.guards) cr.guards.push_back(g.text);
      s.regions.push_back(std::move(cr));
    }
  return s;
}

}  // namespace

ExplainCosts measure_explain_costs(const model::Model& model, const std::vector<std::vector<InputSpec>>& calls,
                                   const capture::CompileOptions& options, int rounds, uint64_t seed) {
  backends::register_builtin_backends();
  if (calls.empty()) throw Error(model.path() + ": no inputs given (pass --input at least once)");
  if (rounds < 1) throw Error("--cost-rounds " + std::to_string(rounds) + ": must be at least 1");
  model::ScopedPrintHandler quiet;
  torch::NoGradGuard no_grad;
  std::vector<std::vector<at::Tensor>> inputs;
  for (size_t i = 0; i < calls.size(); ++i) inputs.push_back(make_inputs(calls[i], seed == 0 ? 0 : seed + i));

  ExplainCosts out;
  out.rounds = rounds;
  out.calls = static_cast<int>(calls.size());
  Pass first = run_pass(model, inputs, options, rounds);
  out.regions = first.regions;
  out.pass = first.measure;
  out.breaks = report::measure_break_costs(break_records(*first.rt), first.warm_timeline, 0);
  out.timeline = first.warm_timeline;
  for (auto& e : out.timeline) e.run = -1;
  for (auto& b : out.breaks) b.run = -1;
  // Lost fusion across each break: the regions joined and put through Kiln's scheduler, measured.
  out.lost_fusion = measure_lost_fusion(model, calls, options, rounds, seed);
  apply_lost_fusion(out.breaks, out.lost_fusion);
  auto churn = report::dimension_churn(report::recompile_history(history_session(*first.rt)));
  for (const auto& c : churn) out.advice.push_back(report::churn_advice(c));
  if (!churn.empty() && !options.dynamic.value_or(false)) {
    capture::CompileOptions dyn = options;
    dyn.dynamic = true;
    Pass second = run_pass(model, inputs, dyn, rounds);
    out.has_effect = true;
    out.effect.advice = out.advice.front();
    out.effect.before = first.measure;
    out.effect.after = second.measure;
    out.effect.outputs_equal = true;
    for (size_t i = 0; i < first.outputs.size(); ++i) {
      ValueError err = compare_to_eager(second.outputs[i], first.outputs[i]);
      out.effect.outputs_equal = out.effect.outputs_equal && err.ok && err.problem.empty();
      out.effect.max_abs_diff = std::max(out.effect.max_abs_diff, err.max_abs);
    }
  }
  return out;
}

ExplainCosts measure_explain_costs(const std::string& model_path, const std::vector<std::vector<InputSpec>>& calls,
                                   const capture::CompileOptions& options, int rounds, uint64_t seed) {
  return measure_explain_costs(model::load_model(model_path), calls, options, rounds, seed);
}

session::RecompileCosts recompile_costs(const ExplainCosts& c) {
  session::RecompileCosts r;
  r.rounds = c.rounds;
  r.calls = c.calls;
  r.regions = c.regions;
  r.pass = c.pass;
  r.advice = c.advice;
  r.has_effect = c.has_effect;
  r.effect = c.effect;
  return r;
}

std::string lost_fusion_text(const session::BreakCost& b) { return "lost fusion " + report::lost_fusion_text(b); }

std::string explain_costs_text(const ExplainCosts& c) {
  using report::fixed;
  using report::percent;
  std::ostringstream os;
  os << "\nWhat each graph break costs (measured over " << c.rounds << " passes through the calls, per call)\n";
  if (c.breaks.empty()) os << "  no graph break stood between regions\n";
  int i = 1;
  for (const auto& b : c.breaks) {
    os << "  " << i++ << ". " << b.break_id << " at " << b.file << ":" << b.line << "  " << fixed(b.total_ms, 3)
       << " ms per call (" << percent(b.share) << " of the call): gap " << fixed(b.gap_ms, 3) << " ms (interpreter "
       << fixed(b.interpreter_ms, 3) << " ms), guards of the next region " << fixed(b.guard_ms, 3) << " ms, "
       << lost_fusion_text(b);
    if (b.shared_gaps > 0) os << "; shares its gap with other breaks (split evenly)";
    os << "\n";
  }
  os << "\nWhat recompiles cost (the first pass through the calls)\n";
  for (const auto& r : c.regions) {
    os << "  region " << r.region << ": " << report::region_recompile_text(r) << "\n";
    for (const auto& e : r.entries) os << "    " << e.compile_id << " " << report::entry_recompile_text(e) << "\n";
  }
  for (const auto& a : c.advice) os << "  advice: " << a << "\n";
  if (c.has_effect) {
    const auto& b = c.effect.before;
    const auto& a = c.effect.after;
    os << "\nFollowing the advice, measured (dynamic=" << b.dynamic << " -> dynamic=" << a.dynamic << ")\n";
    for (const auto& row : report::dynamic_effect_rows(c.effect))
      if (row[0] != "dynamic") os << "  " << row[0] << std::string(18 - row[0].size(), ' ') << row[1] << " -> " << row[2] << "\n";
    os << "  " << report::dynamic_effect_outputs_text(c.effect) << "\n";
  }
  return os.str();
}

namespace {

// A break's lost fusion: measured (the kernels that fuse across, each side's kernels timed, their
// times and the loss), or not, with the reason.
nlohmann::ordered_json lost_fusion_json(const ExplainCosts& c, const session::BreakCost& b) {
  using nlohmann::ordered_json;
  if (!b.lost_fusion_checked) return ordered_json{{"measured", false}, {"reason", "not checked"}};
  if (!b.lost_fusion_unmeasured.empty()) return ordered_json{{"measured", false}, {"reason", b.lost_fusion_unmeasured}};
  ordered_json j = {{"measured", true}, {"lost_ms", b.lost_fusion_ms}, {"fused_across", ordered_json::array()}};
  for (const auto& l : c.lost_fusion) {
    if (l.info.id != b.break_id || l.info.loc.line != b.line || l.info.loc.file != b.file || l.info.reason != b.reason)
      continue;
    for (const auto& f : l.fused) j["fused_across"].push_back(ordered_json{{"fused", f.fused}, {"from", f.before}});
    j["before_kernels"] = l.compared_before;
    j["after_kernels"] = l.compared_after;
    j["before_ms"] = l.before_ms;
    j["after_ms"] = l.after_ms;
    break;
  }
  return j;
}

}  // namespace

std::string explain_costs_json(const ExplainCosts& c) {
  using nlohmann::ordered_json;
  ordered_json breaks = ordered_json::array();
  for (const auto& b : c.breaks)
    breaks.push_back(ordered_json{{"id", b.break_id},       {"reason", b.reason},
                                  {"file", b.file},         {"line", b.line},
                                  {"total_ms", b.total_ms}, {"share", b.share},
                                  {"gap_ms", b.gap_ms},     {"interpreter_ms", b.interpreter_ms},
                                  {"guard_ms", b.guard_ms}, {"step_ms", b.step_ms},
                                  {"gaps", b.gaps},         {"shared_gaps", b.shared_gaps},
                                  {"lost_fusion", lost_fusion_json(c, b)}});
  // The recompile part as the reports write it (without "calls"; dynamic_effect only when measured).
  const auto rc = ordered_json::parse(report::recompile_costs_json(recompile_costs(c)));
  ordered_json j = {{"rounds", c.rounds}, {"breaks", breaks}, {"regions", rc["regions"]}, {"pass", rc["pass"]},
                    {"advice", rc["advice"]}};
  if (c.has_effect) j["dynamic_effect"] = rc["dynamic_effect"];
  return safe_dump(j, 2);
}

}  // namespace kiln::runtime

namespace kiln::runtime {

std::string explain_json_with_costs(const ExplainResult& r, const ExplainCosts& c) {
  auto j = nlohmann::ordered_json::parse(explain_json(r));
  j["costs"] = nlohmann::ordered_json::parse(explain_costs_json(c));
  return safe_dump(j, 2);
}

}  // namespace kiln::runtime
