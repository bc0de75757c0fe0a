// Deduplicating graph breaks; see break_groups.h.
#include "engine/report/break_groups.h"

#include <algorithm>
#include <map>

namespace kiln::report {

std::vector<BreakGroup> group_breaks(const std::vector<session::GraphBreakRecord>& breaks) {
  std::vector<BreakGroup> out;
  std::map<std::string, size_t> index;
  for (const auto& r : breaks) {
    const auto& b = r.info;
    std::string key = b.id + "\n" + b.reason + "\n" + b.loc.file + ":" + std::to_string(b.loc.line);
    auto [it, inserted] = index.emplace(key, out.size());
    if (inserted) out.push_back(BreakGroup{&r, 0, 0, {}});
    auto& g = out[it->second];
    g.hits += r.hits;
    g.sites += 1;
    if (!r.compile_id.empty() && std::find(g.compile_ids.begin(), g.compile_ids.end(), r.compile_id) == g.compile_ids.end())
      g.compile_ids.push_back(r.compile_id);
  }
  return out;
}

}  // namespace kiln::report
