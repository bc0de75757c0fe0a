// Measured costs on real runs: kiln profile stores what each break cost (breaky, and a model with
// breaks of very different weight ranked by it), and kiln explain --cost measures recompiles and
// the effect of dynamic=True on shape_branch.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "engine/commands/explain.h"
#include "engine/commands/profile_model.h"
#include "engine/model/model.h"
#include "engine/report/break_costs.h"
#include "engine/session/store.h"
#include "tests/support/paths.h"
#include "tests/support/weighted_breaks.h"

using namespace kiln;

namespace {

session::Session profile(const std::string& model, const std::string& input, const std::string& out) {
  runtime::ProfileOptions o;
  o.modes = {"eager", "default"};
  o.iters = 5;
  o.timeline_iters = 5;
  o.device = "cpu";
  return runtime::profile_model(model::load_model(model), {parse_input_spec(input)}, o, out);
}

}  // namespace

TEST(BreakCostsProfile, BreakyCostsAreStoredPerSiteForTheCompiledRun) {
  const std::string path = test::temp_dir() + "/breaky.kiln";
  auto s = profile(test::example("breaky.pt"), "4x64", path);
  const int run = report::shown_break_cost_run(s);
  ASSERT_GE(run, 0);
  auto costs = report::break_costs_of(s, run);
  auto groups = report::ranked_break_groups(s);
  EXPECT_EQ(costs.size(), groups.size());  // every site stands between regions
  for (size_t i = 0; i < costs.size(); ++i) {
    EXPECT_EQ(costs[i].iterations, 5);
    EXPECT_GT(costs[i].gap_ms, 0);
    EXPECT_GE(costs[i].gap_ms, costs[i].interpreter_ms);
    EXPECT_NEAR(costs[i].total_ms, costs[i].gap_ms + costs[i].guard_ms, 1e-12);
    EXPECT_GT(costs[i].share, 0);
    EXPECT_LT(costs[i].share, 1);
    if (i > 0) EXPECT_GE(costs[i - 1].total_ms, costs[i].total_ms);
    // The panel's and reports' order is the cost order.
    EXPECT_EQ(report::cost_of(costs, *groups[i].first)->total_ms, costs[i].total_ms);
  }
  // The eager run has no regions: nothing measured for it.
  for (const auto& c : s.break_costs) EXPECT_EQ(c.run, run);
  auto back = session::load_session(path);
  ASSERT_EQ(back.break_costs.size(), s.break_costs.size());
  EXPECT_EQ(back.break_costs[0].total_ms, s.break_costs[0].total_ms);
}

TEST(BreakCostsProfile, HeavyLoopOutranksPrintAndScalarRead) {
  const std::string path = test::temp_dir() + "/weighted.kiln";
  auto s = profile(test::weighted_breaks_model(), "16x64", path);
  auto costs = report::break_costs_of(s, report::shown_break_cost_run(s));
  ASSERT_EQ(costs.size(), 3u);
  EXPECT_EQ(costs[0].break_id, "KB005");  // 200 rounds of eager ops in the gap
  // The loop's gap is at least ten times the print's: two regions with nothing but print between.
  const session::BreakCost* print = nullptr;
  for (const auto& c : costs)
    if (c.break_id == "KB001") print = &c;
  ASSERT_NE(print, nullptr);
  EXPECT_GT(costs[0].total_ms, 10 * print->total_ms);
  EXPECT_GT(costs[0].share, 0.5);
}

TEST(ExplainCosts, RecompilesAndTheMeasuredEffectOfDynamic) {
  auto m = model::load_model(test::example("shape_branch.pt"));
  std::vector<std::vector<InputSpec>> calls;
  for (const char* shape : {"2x16", "3x16", "6x16", "7x16", "8x16"}) calls.push_back({parse_input_spec(shape)});
  capture::CompileOptions o;
  o.dynamic = false;  // every size change recompiles
  auto c = runtime::measure_explain_costs(m, calls, o, 3, 1);
  ASSERT_EQ(c.regions.size(), 1u);
  const auto& r = c.regions[0];
  ASSERT_EQ(r.entries.size(), 5u);  // one entry per size
  double sum = 0;
  for (const auto& e : r.entries) {
    EXPECT_GT(e.compile_ms, 0);
    EXPECT_GE(e.hits, 1);
    sum += e.compile_ms;
  }
  EXPECT_NEAR(r.compile_ms, sum, 1e-9);
  EXPECT_EQ(r.failed_guard_checks, 1 + 2 + 3 + 4);  // each new size fails every older entry's guards
  EXPECT_GT(r.failed_guard_ms, 0);
  ASSERT_FALSE(c.advice.empty());
  EXPECT_NE(c.advice[0].find("dimension 0 of 'x'"), std::string::npos) << c.advice[0];
  ASSERT_TRUE(c.has_effect);
  EXPECT_EQ(c.effect.before.compiles, 5);
  EXPECT_EQ(c.effect.after.dynamic, "true");
  EXPECT_LT(c.effect.after.compiles, c.effect.before.compiles);  // the branch on x.size(0) > 4: two entries
  EXPECT_TRUE(c.effect.outputs_equal);
  EXPECT_GT(c.effect.before.warm_call_ms, 0);
  EXPECT_GT(c.effect.after.warm_call_ms, 0);

  // explain --cost --json: one document, explain's fields and the costs.
  auto r0 = runtime::explain_model(m, calls, o, 1);
  auto j = nlohmann::json::parse(runtime::explain_json_with_costs(r0, c));
  EXPECT_EQ(j["compile_count"], 5);
  EXPECT_EQ(j["costs"]["regions"][0]["entries"].size(), 5u);
  EXPECT_TRUE(j["costs"]["regions"][0]["failed_guard_ms"].is_number());
  EXPECT_EQ(j["costs"]["dynamic_effect"]["before"]["compiles"], 5);
  EXPECT_EQ(j["costs"]["dynamic_effect"]["after"]["dynamic"], "true");
  EXPECT_TRUE(j["costs"]["dynamic_effect"]["outputs_equal"].get<bool>());
  const std::string text = runtime::explain_costs_text(c);
  EXPECT_NE(text.find("Following the advice, measured (dynamic=false -> dynamic=true)"), std::string::npos) << text;
}

TEST(ExplainCosts, BreakCostsOverTheCallsRankTheLoopFirst) {
  auto m = model::load_model(test::weighted_breaks_model());
  auto c = runtime::measure_explain_costs(m, {{parse_input_spec("16x64")}}, {}, 5, 1);
  ASSERT_EQ(c.breaks.size(), 3u);
  EXPECT_EQ(c.breaks[0].break_id, "KB005");
  EXPECT_EQ(c.breaks[0].iterations, 5);
  EXPECT_FALSE(c.has_effect);  // one shape: nothing recompiled
  auto j = nlohmann::json::parse(runtime::explain_costs_json(c));
  EXPECT_EQ(j["breaks"][0]["id"], "KB005");
  EXPECT_TRUE(j["breaks"][0]["total_ms"].is_number());
  EXPECT_TRUE(j["breaks"][0]["share"].is_number());
}
