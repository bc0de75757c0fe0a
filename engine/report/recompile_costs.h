// What recompiles cost, as the reports and the guards panel word it (session::RecompileCosts, which
// kiln explain --cost -o stores).
//
// region_recompile_text(r): "compile 0.299 ms over 5 cache entries, failed guard checks 10
//   (0.004 ms)" and, after the recompile limit, ", ran eagerly 3x (0.120 ms)".
// entry_recompile_text(e): "compile 0.050 ms, hits 1" and ", because: <reason>" for a recompile.
// dynamic_effect_rows(e): the measured effect of following the advice, one row per figure:
//   {what, before, after} ("compiles", "5", "2"), times in ms with three decimals.
// dynamic_effect_outputs_text(e): "outputs equal the first configuration's (max abs diff 0)" or
//   "outputs DIFFER from ...".
// recompile_costs_json(c): the costs as one JSON object (minified): rounds, calls, pass, regions (each with its
//   entries), advice, dynamic_effect (null unless measured); the reports' JSON and kiln explain --cost --json.
// None of these escape: each renderer escapes for its medium.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "engine/session/session.h"

namespace kiln::report {

std::string region_recompile_text(const session::RegionRecompileCost& r);
std::string entry_recompile_text(const session::RecompileEntryCost& e);
std::vector<std::array<std::string, 3>> dynamic_effect_rows(const session::DynamicEffect& e);
std::string dynamic_effect_outputs_text(const session::DynamicEffect& e);
// The recompile cost of `region` in `c`, or nullptr.
const session::RegionRecompileCost* region_recompile_cost(const session::RecompileCosts& c, int region);
std::string recompile_costs_json(const session::RecompileCosts& c);

}  // namespace kiln::report
