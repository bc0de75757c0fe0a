// diff_guards(before, after): how two cache entries' guard sets differ, to answer "why did this
// recompile" by comparing [r/0] with [r/1].
//
// A guard's key is its text up to the value it checks: the left side of "==", "!=", ">=", "<=",
// ">", "<", " is ", or up to the first ", " (Dynamo's TENSOR_MATCH: check_tensor(L['x'], ...)).
// A text without any of those is its own key.
// post: one change per key present in either set whose texts differ: Added (only in `after`),
//       Removed (only in `before`), Changed (in both with different texts); guards with equal
//       texts are left out. Order: `before`'s order for Removed/Changed, then `after`'s for Added.
#pragma once

#include <string>
#include <vector>

namespace kiln::viewers {

struct GuardChange {
  enum class Kind { Added, Removed, Changed };
  Kind kind = Kind::Added;
  std::string before;  // "" for Added
  std::string after;   // "" for Removed
};

std::string guard_key(const std::string& guard);
std::vector<GuardChange> diff_guards(const std::vector<std::string>& before, const std::vector<std::string>& after);
const char* guard_change_name(GuardChange::Kind k);

}  // namespace kiln::viewers
