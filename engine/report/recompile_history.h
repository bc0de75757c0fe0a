// recompile_history(session): why each recompile happened, for reports.
//
// post: one entry per Recompile or RecompileLimit event, in event order, with the GuardFailure
//       messages of the same call and region that came before it (the guards that failed). A
//       session with no such events (an import that carries reasons on its compiled regions)
//       gives one entry per region with a non-empty recompile_reason, call = -1.
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

}  // namespace kiln::report
