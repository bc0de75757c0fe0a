// observations(session): what Kiln can tell from a session's data, as plain sentences for the
// workbench's comparison panel and the reports (one home: both read it here). A pure function.
//
// Sentences, in this order (each only when the data supports it):
//   - a mode that was skipped or failed, with its reason;
//   - per compiled run against eager: faster ("default is 1.8x faster than eager") or slower, and
//     when slower on a GPU busy less than half the time, that the GPU idles and which mode to try
//     ("default is slower than eager: the GPU is busy only 29 % of the time — try reduce-overhead");
//   - host overhead (guards, interpreter) above 20 % of a run's median;
//   - how many iterations pay a run's cold compile back;
//   - max error vs eager above 1e-3 (relative) in a mode;
//   - kernel launches saved per iteration against eager, and by reduce-overhead against default;
//   - graph breaks and recompiles: how many, and which panel shows them.
#pragma once

#include <string>
#include <vector>

#include "engine/report/memory_view.h"
#include "engine/session/session.h"

namespace kiln::report {

inline constexpr double kErrorTolerance = 1e-3;

std::vector<std::string> observations(const session::Session& s);
// The same with every run's memory peaks gathered already (the session's timeline is not read).
std::vector<std::string> observations(const session::Session& s, const RunMemoryPeaks& memory);

// One line that answers "did compiling pay?": the fastest compiled run against eager (or that none
// beats it), how many runs failed; for an imported log without runs, what it holds.
std::string verdict(const session::Session& s);

}  // namespace kiln::report
