// What fixing each graph break would gain, measured; see what_if.h.
#include "engine/commands/what_if.h"


#include <algorithm>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/backends/builtin.h"
#include "engine/base/error.h"
#include "engine/base/json_text.h"
#include "engine/capture/what_if.h"
#include "engine/commands/explain.h"
#include "engine/report/number_text.h"
#include "engine/runtime/captured_runtime.h"
#include "engine/runtime/compare_values.h"
#include "engine/runtime/example_inputs.h"
#include "engine/model/scoped_print_handler.h"

namespace kiln::runtime {

namespace {

// Lines of printed text.
std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream is(text);
  for (std::string line; std::getline(is, line);)
    if (!line.empty()) out.push_back(line);
  return out;
}

// What `expected` holds that `actual` lacks (as multisets, in `expected`'s order).
std::vector<std::string> missing_lines(const std::vector<std::string>& expected, std::vector<std::string> actual) {
  std::vector<std::string> out;
  for (const auto& l : expected) {
    auto it = std::find(actual.begin(), actual.end(), l);
    if (it == actual.end())
      out.push_back(l);
    else
      actual.erase(it);
  }
  return out;
}

c10::IValue one_value(const std::vector<c10::IValue>& outs) {
  return outs.size() == 1 ? outs[0] : c10::IValue(c10::ivalue::Tuple::create(outs));
}

// One program being timed: the model as it is or rewritten.
struct Config {
  std::vector<int> fixes;  // break indices removed (empty: the program as it is)
  std::unique_ptr<CapturedRuntime> rt;
  std::vector<double> call_ms;
  WhatIfMeasure measure;
  bool failed = false;
};

// Sends LibTorch's print() output to a string while alive.
struct PrintCapture {
  PrintCapture() { text().clear(); }
  static std::string& text() {
    static std::string t;
    return t;
  }
  model::ScopedPrintHandler handler{[](const std::string& s) { text() += s; }};
};

// Eager on the original model versus the rewritten program, on fresh random inputs (one per call).
WhatIfCheck check_against_eager(const model::Model& original, CapturedRuntime& rt,
                                const std::vector<std::vector<InputSpec>>& calls, bool bit_for_bit) {
  WhatIfCheck c;
  c.ok = true;
  c.rule = bit_for_bit ? "bit for bit" : "";
  torch::jit::Module module = original.impl->module;
  for (const auto& call : calls) {
    auto inputs = make_inputs(call, 0);
    std::vector<c10::IValue> args(inputs.begin(), inputs.end());
    c10::IValue expected;
    std::string printed;
    {
      PrintCapture capture;
      expected = clone_value(eager_call(module, args));
      printed = PrintCapture::text();
    }
    std::ostringstream sink;
    c10::IValue actual = one_value(rt.run(inputs, &sink));
    auto missing = missing_lines(lines_of(printed), lines_of(sink.str()));
    c.missing_prints.insert(c.missing_prints.end(), missing.begin(), missing.end());
    ValueError err;
    if (bit_for_bit) {
      err = value_error(compare_values("output", actual, expected, 0, 0));
    } else {
      err = compare_to_eager(actual, expected);
      c.rule = tolerance_for(expected).str();
    }
    c.ok = c.ok && err.ok && err.problem.empty();
    c.max_abs_diff = std::max(c.max_abs_diff, err.max_abs);
    if (c.problem.empty()) c.problem = err.problem;
  }
  return c;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

bool same_site(const capture::GraphBreak& a, const capture::GraphBreak& b) {
  return a.id == b.id && a.op == b.op && a.loc.line == b.loc.line && a.loc.col == b.loc.col;
}

}  // namespace

WhatIfResult measure_what_if(const model::Model& model, const std::vector<std::vector<InputSpec>>& calls,
                             const capture::CompileOptions& options, int rounds,
                             const std::optional<capture::GraphBreak>& only) {
  backends::register_builtin_backends();
  if (calls.empty()) throw Error(model.path() + ": no inputs given (pass --input at least once)");
  if (rounds < 1) throw Error("--what-if-rounds " + std::to_string(rounds) + ": must be at least 1");
  torch::NoGradGuard no_grad;
  PrintCapture quiet;  // eager's and the interpreter's print() go nowhere while measuring

  WhatIfResult r;
  r.model = model.path();
  r.rounds = rounds;
  r.calls = static_cast<int>(calls.size());
  r.backend = options.backend;
  std::vector<std::vector<at::Tensor>> inputs;
  for (const auto& c : calls) inputs.push_back(make_inputs(c, 0));
  const capture::WhatIfExamples examples{model.impl->frozen._ivalue(), inputs};

  std::vector<Config> configs(1);
  configs[0].rt = std::make_unique<CapturedRuntime>(model, options);
  const auto& part = configs[0].rt->partition();
  r.breaks = static_cast<int>(part.breaks.size());
  auto plan = capture::plan_break_removals(*model.impl->graph, part, examples);
  for (size_t i = 0; i < part.breaks.size(); ++i) {
    if (only && !same_site(part.breaks[i], *only)) continue;
    WhatIfBreak b;
    b.index = static_cast<int>(i);
    b.info = part.breaks[i];
    b.kind = capture::removal_kind_name(plan[i].kind);
    b.removable = plan[i].removable();
    b.change = plan[i].change;
    b.why_not = plan[i].why_not;
    r.sites.push_back(std::move(b));
  }
  if (only && r.sites.empty())
    throw Error(model.path() + ": no graph break " + only->id + " at " + only->loc.str() + " in the captured program");

  std::vector<int> removable;
  for (const auto& s : r.sites)
    if (s.removable) removable.push_back(s.index);
  for (int i : removable) configs.push_back(Config{{i}, nullptr, {}, {}, false});
  r.has_all = removable.size() >= 2;
  if (r.has_all) {
    r.all_indices = removable;
    configs.push_back(Config{removable, nullptr, {}, {}, false});
  }

  capture::SourceFiles sources;
  for (auto& c : configs) {
    try {
      if (!c.rt) {
        auto impl = std::make_shared<model::LoadedModel>(*model.impl);
        impl->graph = capture::remove_breaks(*model.impl->graph, sources, c.fixes, examples);
        model::Model rewritten;
        rewritten.impl = impl;
        c.rt = std::make_unique<CapturedRuntime>(rewritten, options);
      }
      c.measure.breaks_left = static_cast<int>(c.rt->partition().breaks.size());
      std::ostringstream sink;
      for (const auto& x : inputs) c.rt->run(x, &sink);  // warm-up: every region compiled
      if (!c.fixes.empty()) {
        bool prints_only = options.backend == "eager";
        for (int f : c.fixes) prints_only = prints_only && plan[f].kind == capture::BreakRemoval::Kind::DropPrint;
        c.measure.check = check_against_eager(model, *c.rt, calls, prints_only);
      }
    } catch (const std::exception& e) {
      c.failed = true;
      c.measure.check.ok = false;
      c.measure.check.problem = e.what();
    }
  }

  // Timed: the configurations take turns within every pass, so drift in the machine's speed falls
  // on all of them alike.
  std::ostringstream sink;
  for (int round = 0; round < rounds; ++round)
    for (auto& c : configs) {
      if (c.failed) continue;
      for (const auto& x : inputs) {
        auto t0 = std::chrono::steady_clock::now();
        c.rt->run(x, &sink);
        auto t1 = std::chrono::steady_clock::now();
        c.call_ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
      }
      sink.str("");
    }
  for (auto& c : configs) c.measure.median_ms = median(c.call_ms);
  r.baseline_ms = configs[0].measure.median_ms;
  for (auto& c : configs)
    if (!c.failed && c.measure.median_ms > 0) c.measure.speedup = r.baseline_ms / c.measure.median_ms;

  size_t next = 1;
  for (auto& s : r.sites)
    if (s.removable) s.fixed = configs[next++].measure;
  if (r.has_all) r.all = configs.back().measure;
  return r;
}

WhatIfResult measure_what_if(const std::string& model_path, const std::vector<std::vector<InputSpec>>& calls,
                             const capture::CompileOptions& options, int rounds,
                             const std::optional<capture::GraphBreak>& only) {
  return measure_what_if(model::load_model(model_path), calls, options, rounds, only);
}

namespace {

std::string measure_text(const WhatIfMeasure& m) {
  using report::fixed;
  std::ostringstream os;
  if (m.median_ms <= 0) {
    os << "the rewritten program failed: " << m.check.problem;
    return os.str();
  }
  os << fixed(m.median_ms, 3) << " ms per call, " << fixed(m.speedup, 2) << "x the program's speed, "
     << m.breaks_left << " graph break" << (m.breaks_left == 1 ? "" : "s") << " left; ";
  if (m.check.ok)
    os << "outputs match eager (" << m.check.rule << ", max abs diff " << m.check.max_abs_diff << ")";
  else
    os << "outputs DIFFER from eager (" << m.check.rule << ", max abs diff " << m.check.max_abs_diff
       << (m.check.problem.empty() ? "" : ", " + m.check.problem) << ")";
  if (!m.check.missing_prints.empty()) {
    os << "; no longer prints:";
    for (const auto& l : m.check.missing_prints) os << " \"" << l << "\"";
  }
  return os.str();
}

std::string site_head(const WhatIfBreak& b) {
  return b.info.id + " " + b.info.op + " at " + (b.info.loc.known() ? b.info.loc.str() : std::string("an unknown line"));
}

}  // namespace

std::string what_if_site_text(const WhatIfResult& r, const WhatIfBreak& b) {
  std::ostringstream os;
  os << "What if " << site_head(b) << " were fixed?\n";
  if (!b.removable) {
    os << "Kiln cannot remove it soundly: " << b.why_not << "\n";
    return os.str();
  }
  os << "Rewrite: " << b.change << "\n";
  os << "As it is: " << report::fixed(r.baseline_ms, 3) << " ms per call (median of " << r.rounds * r.calls
     << " calls), " << r.breaks << " graph break" << (r.breaks == 1 ? "" : "s") << "\n";
  os << "Fixed: " << measure_text(b.fixed) << "\n";
  return os.str();
}

std::string what_if_text(const WhatIfResult& r) {
  std::ostringstream os;
  os << "\nWhat if a graph break were fixed (rewritten, checked against eager on fresh inputs, measured over "
     << r.rounds << " passes through the calls; median per call)\n";
  os << "  as it is: " << report::fixed(r.baseline_ms, 3) << " ms per call, " << r.breaks << " graph break"
     << (r.breaks == 1 ? "" : "s") << "\n";
  if (r.sites.empty()) os << "  no graph break to remove\n";
  int i = 1;
  for (const auto& b : r.sites) {
    os << "  " << i++ << ". " << site_head(b) << ": ";
    if (!b.removable) {
      os << "cannot be removed soundly: " << b.why_not << "\n";
      continue;
    }
    os << b.change << "\n       fixed alone: " << measure_text(b.fixed) << "\n";
  }
  if (r.has_all) os << "  all " << r.all_indices.size() << " removable fixed together: " << measure_text(r.all) << "\n";
  return os.str();
}

namespace {

nlohmann::ordered_json measure_json(const WhatIfMeasure& m) {
  return {{"median_ms", m.median_ms},
          {"speedup", m.speedup},
          {"breaks_left", m.breaks_left},
          {"check", {{"ok", m.check.ok},
                     {"rule", m.check.rule},
                     {"max_abs_diff", m.check.max_abs_diff},
                     {"problem", m.check.problem},
                     {"missing_prints", m.check.missing_prints}}}};
}

}  // namespace

std::string what_if_json(const WhatIfResult& r) {
  using nlohmann::ordered_json;
  ordered_json sites = ordered_json::array();
  for (const auto& b : r.sites) {
    ordered_json s = {{"index", b.index},       {"id", b.info.id},         {"op", b.info.op},
                      {"file", b.info.loc.file}, {"line", b.info.loc.line}, {"reason", b.info.reason},
                      {"removable", b.removable}, {"rewrite", b.kind}};
    if (b.removable) {
      s["change"] = b.change;
      s["fixed"] = measure_json(b.fixed);
    } else {
      s["why_not"] = b.why_not;
    }
    sites.push_back(std::move(s));
  }
  ordered_json j = {{"rounds", r.rounds},           {"calls", r.calls},   {"backend", r.backend},
                    {"baseline_ms", r.baseline_ms}, {"breaks", r.breaks}, {"sites", sites}};
  if (r.has_all) {
    auto all = measure_json(r.all);
    all["indices"] = r.all_indices;
    j["all"] = all;
  }
  return safe_dump(j, 2);
}

std::string explain_json_with_what_if(const ExplainResult& r, const WhatIfResult& w, const std::string& costs_json) {
  auto j = nlohmann::ordered_json::parse(explain_json(r));
  if (!costs_json.empty()) j["costs"] = nlohmann::ordered_json::parse(costs_json);
  j["what_if"] = nlohmann::ordered_json::parse(what_if_json(w));
  return safe_dump(j, 2);
}

}  // namespace kiln::runtime
