// `kiln explain --what-if`: each graph break removed where Kiln can do so soundly (capture/what_if.h),
// the rewritten model checked against LibTorch's eager forward of the original model, and the speedup
// of fixing each break alone and all removable ones together, measured. No LibTorch types: the CLI and
// the GUI include this through engine/api.
//
// measure_what_if(model, calls, options, rounds, only)
//   pre:  calls as explain_model takes them; rounds >= 1.
//   post: one WhatIfBreak per break site of the captured program (or only the one matching `only`:
//         same id, op and line), removable ones measured: the program as it is, each removable break
//         fixed alone and (with two or more) all removable ones fixed together, each compiled through
//         CapturedRuntime with `options`, warmed up by one pass through the calls, then timed for
//         `rounds` passes with the configurations taking turns within every pass; per configuration
//         the median of its per-call times. Speedup = the program's median / the rewrite's median.
//         Each rewrite is checked on fresh random inputs (one per call) against eager on the original
//         model: bit for bit where only prints were dropped and the backend is eager, otherwise under
//         compare_to_eager's tolerance; what the eager run printed and the rewrite did not is named.
//   error: kiln::Error for no calls or rounds < 1, or when `only` matches no break of the program.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/capture/capture_types.h"
#include "engine/ir/input_spec.h"
#include "engine/model/model.h"

namespace kiln::runtime {

struct WhatIfCheck {
  bool ok = false;
  std::string rule;         // "bit for bit" or the tolerance ("rtol 1e-04, atol 1e-05")
  double max_abs_diff = 0;
  std::string problem;      // a failed run or a value that could not be compared
  std::vector<std::string> missing_prints;  // lines eager printed that the rewrite did not
};

struct WhatIfMeasure {
  double median_ms = 0;     // per call
  double speedup = 0;       // the program's median over this one
  int breaks_left = 0;      // graph breaks in the rewritten program
  WhatIfCheck check;
};

struct WhatIfBreak {
  int index = -1;           // among the program's breaks
  capture::GraphBreak info;
  std::string kind;         // capture::removal_kind_name
  bool removable = false;
  std::string change;       // when removable
  std::string why_not;      // when not
  WhatIfMeasure fixed;      // when removable
};

struct WhatIfResult {
  std::string model;
  int rounds = 0;
  int calls = 0;
  std::string backend;
  double baseline_ms = 0;   // median per call of the program as it is
  int breaks = 0;           // in the program as it is
  std::vector<WhatIfBreak> sites;
  bool has_all = false;     // two or more removable breaks
  std::vector<int> all_indices;
  WhatIfMeasure all;
};

WhatIfResult measure_what_if(const model::Model& model, const std::vector<std::vector<InputSpec>>& calls,
                             const capture::CompileOptions& options, int rounds = 20,
                             const std::optional<capture::GraphBreak>& only = std::nullopt);
WhatIfResult measure_what_if(const std::string& model_path, const std::vector<std::vector<InputSpec>>& calls,
                             const capture::CompileOptions& options, int rounds = 20,
                             const std::optional<capture::GraphBreak>& only = std::nullopt);

std::string what_if_text(const WhatIfResult& r);
// The one break's result as the breaks panel shows it (plain text, several lines).
std::string what_if_site_text(const WhatIfResult& r, const WhatIfBreak& b);
// The "what_if" object `kiln explain --what-if --json` adds.
std::string what_if_json(const WhatIfResult& r);
struct ExplainResult;
// explain_json(r) with what_if_json(w) as its "what_if" field (and the costs', when given).
std::string explain_json_with_what_if(const ExplainResult& r, const WhatIfResult& w, const std::string& costs_json = "");

}  // namespace kiln::runtime
