// Capture over a sequence of calls, as `kiln explain` reports it: regions, graph breaks,
// guards, recompiles and the events behind them. No LibTorch types: the CLI and GUI include this.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/ir/input_spec.h"
#include "engine/capture/capture_types.h"
#include "engine/model/model.h"

namespace kiln::runtime {

using capture::CompileOptions;
using capture::Event;
using capture::GraphBreak;
using capture::RegionInfo;


struct CallCheck {
  std::vector<InputSpec> inputs;
  bool equal = false;          // equal to module.forward: bit for bit, or within `tolerance` on a GPU
  double max_abs_diff = 0.0;
  std::string tolerance;       // "" (bit for bit), else the rule applied ("rtol 1e-04, atol 1e-05")
  std::vector<std::string> printed;
};

struct ExplainResult {
  std::string model;
  bool exported_program = false;   // torch.export: one graph by construction
  std::vector<GraphBreak> breaks;  // one per break site in the program
  std::vector<int> break_hits;     // per break site: times it was hit over all calls
  std::vector<RegionInfo> regions;
  std::vector<Event> events;
  std::vector<CallCheck> calls;
  int compiles() const;  // cache entries made, all regions
};

// seed 0 draws fresh random inputs for every call; otherwise call i uses seed + i (golden tests).
ExplainResult explain_model(const model::Model& model, const std::vector<std::vector<InputSpec>>& calls,
                            const CompileOptions& options, uint64_t seed = 0);

// The text report of `kiln explain` (pure function of the result).
// timings=false leaves out measured times (for golden tests).
std::string explain_text(const ExplainResult& r, bool timings = true);
std::string explain_json(const ExplainResult& r);

}  // namespace kiln::runtime

// What each break and recompile costs, measured (kiln explain --cost).
#include "engine/commands/explain_costs.h"
