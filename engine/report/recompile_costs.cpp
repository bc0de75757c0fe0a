// Recompile costs in words; see recompile_costs.h.
#include "engine/report/recompile_costs.h"

#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/report/number_text.h"

namespace kiln::report {

std::string region_recompile_text(const session::RegionRecompileCost& r) {
  std::ostringstream os;
  os << "compile " << fixed(r.compile_ms, 3) << " ms over " << r.entries.size() << " cache entr"
     << (r.entries.size() == 1 ? "y" : "ies") << ", failed guard checks " << r.failed_guard_checks << " ("
     << fixed(r.failed_guard_ms, 3) << " ms)";
  if (r.eager_fallback_calls > 0)
    os << ", ran eagerly after the recompile limit " << r.eager_fallback_calls << "x (" << fixed(r.eager_fallback_ms, 3)
       << " ms)";
  else if (r.limit_reached)
    os << ", recompile limit reached";
  return os.str();
}

std::string entry_recompile_text(const session::RecompileEntryCost& e) {
  return "compile " + fixed(e.compile_ms, 3) + " ms, hits " + std::to_string(e.hits) +
         (e.recompile_reason.empty() ? "" : ", because: " + e.recompile_reason);
}

std::vector<std::array<std::string, 3>> dynamic_effect_rows(const session::DynamicEffect& e) {
  auto ms = [](double v) { return fixed(v, 3) + " ms"; };
  const auto& b = e.before;
  const auto& a = e.after;
  return {{"dynamic", b.dynamic, a.dynamic},
          {"compiles", std::to_string(b.compiles), std::to_string(a.compiles)},
          {"compile time", ms(b.compile_ms), ms(a.compile_ms)},
          {"first pass", ms(b.cold_ms), ms(a.cold_ms)},
          {"warm call (mean)", ms(b.warm_call_ms), ms(a.warm_call_ms)},
          {"failed guards", ms(b.failed_guard_ms), ms(a.failed_guard_ms)},
          {"eager fallback", ms(b.eager_fallback_ms), ms(a.eager_fallback_ms)}};
}

std::string dynamic_effect_outputs_text(const session::DynamicEffect& e) {
  std::ostringstream os;
  os << "outputs " << (e.outputs_equal ? "equal" : "DIFFER from") << " the first configuration's (max abs diff "
     << e.max_abs_diff << ")";
  return os.str();
}

const session::RegionRecompileCost* region_recompile_cost(const session::RecompileCosts& c, int region) {
  for (const auto& r : c.regions)
    if (r.region == region) return &r;
  return nullptr;
}

std::string recompile_costs_json(const session::RecompileCosts& c) {
  using nlohmann::ordered_json;
  auto pass = [](const session::RecompilePass& p) {
    return ordered_json{{"dynamic", p.dynamic},           {"compiles", p.compiles},
                        {"compile_ms", p.compile_ms},     {"cold_ms", p.cold_ms},
                        {"warm_call_ms", p.warm_call_ms}, {"failed_guard_ms", p.failed_guard_ms},
                        {"eager_fallback_ms", p.eager_fallback_ms}};
  };
  ordered_json regions = ordered_json::array();
  for (const auto& r : c.regions) {
    ordered_json entries = ordered_json::array();
    for (const auto& e : r.entries)
      entries.push_back(ordered_json{{"compile_id", e.compile_id}, {"compile_ms", e.compile_ms}, {"hits", e.hits},
                                     {"recompile_reason", e.recompile_reason}});
    regions.push_back(ordered_json{{"region", r.region},
                                   {"compile_ms", r.compile_ms},
                                   {"failed_guard_checks", r.failed_guard_checks},
                                   {"failed_guard_ms", r.failed_guard_ms},
                                   {"eager_fallback_calls", r.eager_fallback_calls},
                                   {"eager_fallback_ms", r.eager_fallback_ms},
                                   {"limit_reached", r.limit_reached},
                                   {"entries", entries}});
  }
  ordered_json j{{"rounds", c.rounds}, {"calls", c.calls},   {"pass", pass(c.pass)},
                 {"regions", regions}, {"advice", c.advice}, {"dynamic_effect", nullptr}};
  if (c.has_effect)
    j["dynamic_effect"] = ordered_json{{"advice", c.effect.advice},
                                       {"before", pass(c.effect.before)},
                                       {"after", pass(c.effect.after)},
                                       {"outputs_equal", c.effect.outputs_equal},
                                       {"max_abs_diff", c.effect.max_abs_diff}};
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace kiln::report
