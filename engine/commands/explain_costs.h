// `kiln explain --cost`: what each graph break and each recompile cost over the explained calls,
// measured. No LibTorch types: the CLI includes this through engine/api.
//
// measure_explain_costs(model, calls, options, rounds, seed)
//   pre:  calls as explain_model takes them (each call's inputs); rounds >= 1.
//   post: breaks: report::measure_break_costs over `rounds` traced passes through the calls after a
//         warm-up pass (each call one iteration), each with its lost fusion (measure_lost_fusion over
//         the same calls and rounds, added to its total). recompiles: one traced cold pass through the calls,
//         per region and cache entry its capture + compile time and hits, the time its regions spent
//         in guard checks that failed and running eagerly after the recompile limit. With a
//         dimension that kept changing (report::dimension_churn) and dynamic not already true: the
//         same cold pass and `rounds` warm passes again with dynamic=true, measured the same way, and
//         its outputs compared with the first configuration's.
#pragma once

#include <string>
#include <vector>

#include "engine/capture/capture_types.h"
#include "engine/commands/lost_fusion.h"
#include "engine/ir/input_spec.h"
#include "engine/model/model.h"
#include "engine/session/session.h"

namespace kiln::runtime {

// The recompile costs' values live with the session, which stores them.
using EntryCost = session::RecompileEntryCost;
using RegionCost = session::RegionRecompileCost;
using PassMeasure = session::RecompilePass;
using DynamicEffect = session::DynamicEffect;

struct ExplainCosts {
  int rounds = 0;
  int calls = 0;
  std::vector<session::BreakCost> breaks;  // most costly first, lost fusion included (lost_fusion.h)
  std::vector<LostFusion> lost_fusion;     // per break of the captured program
  std::vector<RegionCost> regions;
  PassMeasure pass;
  std::vector<std::string> advice;         // one per dimension that kept changing
  bool has_effect = false;
  DynamicEffect effect;                    // when has_effect
  // The warm passes' host spans (run -1), from which the break costs were measured.
  std::vector<session::TimelineEvent> timeline;
};

// The recompile part as a session stores it.
session::RecompileCosts recompile_costs(const ExplainCosts& c);

ExplainCosts measure_explain_costs(const model::Model& model, const std::vector<std::vector<InputSpec>>& calls,
                                   const capture::CompileOptions& options, int rounds = 20, uint64_t seed = 0);
// The same on the model at `model_path` (loaded for the CPU).
ExplainCosts measure_explain_costs(const std::string& model_path, const std::vector<std::vector<InputSpec>>& calls,
                                   const capture::CompileOptions& options, int rounds = 20, uint64_t seed = 0);

std::string explain_costs_text(const ExplainCosts& c);
// "lost fusion " + report::lost_fusion_text(b): one break's part as the text output prints it.
std::string lost_fusion_text(const session::BreakCost& b);
// The "costs" object `kiln explain --cost --json` adds.
std::string explain_costs_json(const ExplainCosts& c);
// explain_json(r) with explain_costs_json(c) as its "costs" field: one document.
struct ExplainResult;
std::string explain_json_with_costs(const ExplainResult& r, const ExplainCosts& c);

}  // namespace kiln::runtime
