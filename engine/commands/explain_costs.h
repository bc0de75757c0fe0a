// `kiln explain --cost`: what each graph break and each recompile cost over the explained calls,
// measured. No LibTorch types: the CLI includes this through engine/api.
//
// measure_explain_costs(model, calls, options, rounds, seed)
//   pre:  calls as explain_model takes them (each call's inputs); rounds >= 1.
//   post: breaks: report::measure_break_costs over `rounds` traced passes through the calls after a
//         warm-up pass (each call one iteration). recompiles: one traced cold pass through the calls,
//         per region and cache entry its capture + compile time and hits, the time its regions spent
//         in guard checks that failed and running eagerly after the recompile limit. With a
//         dimension that kept changing (report::dimension_churn) and dynamic not already true: the
//         same cold pass and `rounds` warm passes again with dynamic=true, measured the same way, and
//         its outputs compared with the first configuration's.
#pragma once

#include <string>
#include <vector>

#include "engine/capture/capture_types.h"
#include "engine/ir/input_spec.h"
#include "engine/model/model.h"
#include "engine/session/session.h"

namespace kiln::runtime {

struct EntryCost {
  std::string compile_id;  // "[r/k]"
  double compile_ms = 0;   // capture, the backend's compile and the entry's first run, measured
  int64_t hits = 0;
  std::string recompile_reason;
};

struct RegionCost {
  int region = -1;
  std::vector<EntryCost> entries;
  double compile_ms = 0;           // all entries
  double failed_guard_ms = 0;      // guard checks that failed (each one led to another check or a recompile)
  int failed_guard_checks = 0;
  double eager_fallback_ms = 0;    // region calls run eagerly after the recompile limit
  int eager_fallback_calls = 0;
  bool limit_reached = false;
};

// One configuration's pass through the calls.
struct PassMeasure {
  std::string dynamic;     // "auto", "true", "false"
  int compiles = 0;        // cache entries made
  double compile_ms = 0;   // all regions
  double cold_ms = 0;      // the first pass through the calls, compiles included
  double warm_call_ms = 0; // mean call after it
  double failed_guard_ms = 0;
  double eager_fallback_ms = 0;
};

struct DynamicEffect {
  std::string advice;      // report::churn_advice of the dimension that changed most
  PassMeasure before, after;
  bool outputs_equal = false;  // dynamic=true's outputs equal the first configuration's
  double max_abs_diff = 0;
};

struct ExplainCosts {
  int rounds = 0;
  std::vector<session::BreakCost> breaks;  // most costly first
  std::vector<RegionCost> regions;
  PassMeasure pass;
  std::vector<std::string> advice;         // one per dimension that kept changing
  bool has_effect = false;
  DynamicEffect effect;                    // when has_effect
};

ExplainCosts measure_explain_costs(const model::Model& model, const std::vector<std::vector<InputSpec>>& calls,
                                   const capture::CompileOptions& options, int rounds = 20, uint64_t seed = 0);
// The same on the model at `model_path` (loaded for the CPU).
ExplainCosts measure_explain_costs(const std::string& model_path, const std::vector<std::vector<InputSpec>>& calls,
                                   const capture::CompileOptions& options, int rounds = 20, uint64_t seed = 0);

std::string explain_costs_text(const ExplainCosts& c);
// The "costs" object `kiln explain --cost --json` adds.
std::string explain_costs_json(const ExplainCosts& c);
// explain_json(r) with explain_costs_json(c) as its "costs" field: one document.
struct ExplainResult;
std::string explain_json_with_costs(const ExplainResult& r, const ExplainCosts& c);

}  // namespace kiln::runtime
