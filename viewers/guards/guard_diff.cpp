#include "viewers/guards/guard_diff.h"

#include <map>
#include <set>

namespace kiln::viewers {

std::string guard_key(const std::string& guard) {
  size_t cut = std::string::npos;
  for (const char* op : {" == ", " != ", " >= ", " <= ", " > ", " < ", " is ", ", "}) {
    size_t p = guard.find(op);
    if (p != std::string::npos && p < cut) cut = p;
  }
  return cut == std::string::npos ? guard : guard.substr(0, cut);
}

const char* guard_change_name(GuardChange::Kind k) {
  switch (k) {
    case GuardChange::Kind::Added: return "added";
    case GuardChange::Kind::Removed: return "removed";
    case GuardChange::Kind::Changed: return "changed";
  }
  return "?";
}

std::vector<GuardChange> diff_guards(const std::vector<std::string>& before, const std::vector<std::string>& after) {
  std::set<std::string> before_texts(before.begin(), before.end()), after_texts(after.begin(), after.end());
  // Guards whose text appears in both sets are unchanged; the rest pair up by key.
  std::multimap<std::string, std::string> after_by_key;
  std::vector<std::string> after_left;
  for (const auto& g : after)
    if (!before_texts.count(g)) {
      after_by_key.emplace(guard_key(g), g);
      after_left.push_back(g);
    }
  std::set<std::string> paired;
  std::vector<GuardChange> out;
  for (const auto& g : before) {
    if (after_texts.count(g)) continue;
    auto it = after_by_key.find(guard_key(g));
    if (it != after_by_key.end()) {
      out.push_back({GuardChange::Kind::Changed, g, it->second});
      paired.insert(it->second);
      after_by_key.erase(it);
    } else {
      out.push_back({GuardChange::Kind::Removed, g, ""});
    }
  }
  for (const auto& g : after_left)
    if (!paired.count(g)) out.push_back({GuardChange::Kind::Added, "", g});
  return out;
}

}  // namespace kiln::viewers
