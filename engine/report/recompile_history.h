// recompile_history(session): why each recompile happened, for reports.
//
// post: one entry per Recompile or RecompileLimit event, in event order, with the GuardFailure
//       messages of the same call and region that came before it (the guards that failed). A
//       session with no such events (an import that carries reasons on its compiled regions)
//       gives one entry per region with a non-empty recompile_reason, call = -1, and as failed
//       guards the previous entry's guards on the tensor the reason names (TORCH_TRACE logs the
//       reason, not the guard).
// dimension_churn(history): the tensor dimensions whose size changes caused recompiles
//       ("tensor 'x' size mismatch at index 0. expected 4, actual 8"), most recompiles first.
// churn_advice(churn): what to do about one, in a sentence.
#pragma once

#include <string>
#include <vector>

#include "engine/session/session.h"

namespace kiln::report {

struct RecompileEntry {
  std::string compile_id;
  int call = -1;     // the forward call that triggered it; -1 when unknown
  int region = -1;
  bool limit = false;  // the recompile limit was hit: the region runs eagerly from here on
  std::string reason;
  std::vector<std::string> failed_guards;
};

std::vector<RecompileEntry> recompile_history(const session::Session& s);

struct DimensionChurn {
  std::string tensor;  // as the guard names it: "x", "L['x']"
  int dim = 0;
  int recompiles = 0;
  std::vector<std::string> sizes;  // in order of appearance: "4", "8", "16"
  std::vector<std::string> compile_ids;
};

std::vector<DimensionChurn> dimension_churn(const std::vector<RecompileEntry>& history);
std::string churn_advice(const DimensionChurn& churn);

}  // namespace kiln::report
