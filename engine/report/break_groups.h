// group_breaks(breaks): graph breaks deduplicated for reports, the way `kiln explain` lists them.
//
// Two records are one group when they share the break id, the reason and the source file:line.
// post: groups in the order of their first record; `hits` sums the records' hits, `sites` counts
//       the records, compile_ids lists the distinct non-empty compile ids in first-seen order.
#pragma once

#include <string>
#include <vector>

#include "engine/session/session.h"

namespace kiln::report {

struct BreakGroup {
  const session::GraphBreakRecord* first = nullptr;  // points into the input vector
  int hits = 0;
  int sites = 0;
  std::vector<std::string> compile_ids;
};

std::vector<BreakGroup> group_breaks(const std::vector<session::GraphBreakRecord>& breaks);

}  // namespace kiln::report
