// Recompile entries from capture events or region records; see recompile_history.h.
#include "engine/report/recompile_history.h"

#include <algorithm>
#include <map>
#include <regex>
#include <set>

namespace kiln::report {

namespace {

// The guards of an earlier entry of `region` (before the one compiled as `compile_id`) on the tensor
// that `reason` names: what failed, where the log gives only the reason.
std::vector<std::string> guards_on_named_tensor(const session::Session& s, const std::string& reason, int region,
                                                const std::string& compile_id) {
  static const std::regex named(R"(tensor '([^']+)')");
  std::smatch m;
  if (!std::regex_search(reason, m, named)) return {};
  const std::string tensor = m[1].str();
  const std::string local = tensor.find('[') == std::string::npos ? "L['" + tensor + "']" : tensor;
  size_t end = s.regions.size();
  for (size_t i = 0; i < s.regions.size(); ++i)
    if (s.regions[i].compile_id == compile_id) end = i;
  std::vector<std::string> out;
  for (size_t j = end; j-- > 0;) {
    const auto& prev = s.regions[j];
    if (prev.region != region || prev.compile_id == compile_id) continue;
    for (const auto& g : prev.guards)
      if (g.find("check_tensor(" + local + ",") != std::string::npos || g.find(local + ".size()") != std::string::npos)
        out.push_back(g);
    if (!out.empty()) break;
  }
  return out;
}

}  // namespace

std::vector<RecompileEntry> recompile_history(const session::Session& s) {
  using Kind = capture::Event::Kind;
  std::vector<RecompileEntry> out;
  std::vector<const capture::Event*> failures;  // guard failures not yet attached to a recompile
  for (const auto& e : s.events) {
    if (e.kind == Kind::GuardFailure) {
      failures.push_back(&e);
      continue;
    }
    if (e.kind != Kind::Recompile && e.kind != Kind::RecompileLimit) continue;
    RecompileEntry r;
    r.compile_id = e.compile_id;
    r.call = e.call;
    r.region = e.region;
    r.limit = e.kind == Kind::RecompileLimit;
    r.reason = e.message;
    std::vector<const capture::Event*> rest;
    for (const auto* f : failures) {
      if (f->call == e.call && f->region == e.region) r.failed_guards.push_back(f->message);
      else rest.push_back(f);
    }
    failures = rest;
    if (r.failed_guards.empty()) r.failed_guards = guards_on_named_tensor(s, r.reason, r.region, r.compile_id);
    out.push_back(std::move(r));
  }
  if (!out.empty()) return out;
  for (const auto& reg : s.regions) {
    if (reg.recompile_reason.empty()) continue;
    RecompileEntry r;
    r.compile_id = reg.compile_id;
    r.region = reg.region;
    r.reason = reg.recompile_reason;
    r.failed_guards = guards_on_named_tensor(s, r.reason, r.region, r.compile_id);
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<DimensionChurn> dimension_churn(const std::vector<RecompileEntry>& history) {
  // Dynamo's and Kiln's wording alike: "tensor 'x' size mismatch at index 0. expected 4, actual 8"
  static const std::regex mismatch(R"(tensor '([^']+)' size mismatch at index (\d+)\. expected ([^,]+), actual (\S+))");
  std::map<std::pair<std::string, int>, DimensionChurn> by_dim;
  std::vector<std::pair<std::string, int>> order;
  for (const auto& r : history) {
    std::vector<std::string> texts = {r.reason};
    texts.insert(texts.end(), r.failed_guards.begin(), r.failed_guards.end());
    std::set<std::pair<std::string, int>> counted;  // one recompile counts once per dimension
    for (const auto& text : texts)
      for (auto it = std::sregex_iterator(text.begin(), text.end(), mismatch); it != std::sregex_iterator(); ++it) {
        const auto& m = *it;
        auto key = std::make_pair(m[1].str(), std::stoi(m[2].str()));
        if (!counted.insert(key).second) continue;
        auto [slot, fresh] = by_dim.try_emplace(key);
        if (fresh) order.push_back(key);
        auto& c = slot->second;
        c.tensor = key.first;
        c.dim = key.second;
        ++c.recompiles;
        for (const std::string& v : {m[3].str(), m[4].str()})
          if (std::find(c.sizes.begin(), c.sizes.end(), v) == c.sizes.end()) c.sizes.push_back(v);
        c.compile_ids.push_back(r.compile_id);
      }
  }
  std::vector<DimensionChurn> out;
  for (const auto& k : order) out.push_back(by_dim[k]);
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.recompiles > b.recompiles; });
  return out;
}

std::string churn_advice(const DimensionChurn& c) {
  std::string sizes;
  for (size_t i = 0; i < c.sizes.size() && i < 6; ++i) sizes += (i ? ", " : "") + c.sizes[i];
  if (c.sizes.size() > 6) sizes += ", …";
  const std::string name = c.tensor.rfind("L['", 0) == 0 ? c.tensor.substr(3, c.tensor.size() - 5) : c.tensor;
  return "dimension " + std::to_string(c.dim) + " of '" + name + "' changed in " + std::to_string(c.recompiles) +
         " recompile" + (c.recompiles == 1 ? "" : "s") + " (sizes " + sizes + "): compile with dynamic=True (kiln: " +
         "--dynamic true) or mark it before the call with torch._dynamo.mark_dynamic(" + name + ", " +
         std::to_string(c.dim) + ")";
}

}  // namespace kiln::report
