// Measured costs on real runs: kiln profile stores what each break cost (breaky, and a model with
// breaks of very different weight ranked by it), and kiln explain --cost measures recompiles and
// the effect of dynamic=True on shape_branch.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "engine/commands/explain.h"
#include "engine/commands/explain_session.h"
#include "engine/report/render_html.h"
#include "engine/report/render_json.h"
#include "engine/report/render_markdown.h"
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
    EXPECT_NEAR(costs[i].total_ms, costs[i].gap_ms + costs[i].guard_ms + costs[i].lost_fusion_ms, 1e-12);
    // Lost fusion was checked for every site: the if on tensor data cannot be joined and says why.
    EXPECT_TRUE(costs[i].lost_fusion_checked);
    if (costs[i].break_id == "KB002")
      EXPECT_NE(costs[i].lost_fusion_unmeasured.find("data-dependent control flow"), std::string::npos);
    else
      EXPECT_EQ(costs[i].lost_fusion_unmeasured, "");
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
  for (size_t i = 0; i < back.break_costs.size(); ++i) {
    EXPECT_EQ(back.break_costs[i].lost_fusion_checked, s.break_costs[i].lost_fusion_checked);
    EXPECT_EQ(back.break_costs[i].lost_fusion, s.break_costs[i].lost_fusion);
    EXPECT_EQ(back.break_costs[i].lost_fusion_ms, s.break_costs[i].lost_fusion_ms);
    EXPECT_EQ(back.break_costs[i].lost_fusion_unmeasured, s.break_costs[i].lost_fusion_unmeasured);
  }
  EXPECT_FALSE(back.recompile_costs.measured());  // kiln profile runs one shape
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
  // Lost fusion per break: the loop cannot be joined (why), the print's regions fuse (which kernels).
  ASSERT_EQ(c.lost_fusion.size(), 3u);
  for (const auto& b : j["breaks"]) {
    const auto& lf = b["lost_fusion"];
    if (b["id"] == "KB005") {
      EXPECT_FALSE(lf["measured"].get<bool>());
      EXPECT_NE(lf["reason"].get<std::string>().find("cannot be joined"), std::string::npos);
    }
    if (b["id"] == "KB001") {
      ASSERT_TRUE(lf["measured"].get<bool>()) << lf.dump();
      ASSERT_EQ(lf["fused_across"].size(), 1u) << lf.dump();
      EXPECT_EQ(lf["fused_across"][0]["from"].size(), 2u);
      EXPECT_TRUE(lf["before_ms"].is_number());
      EXPECT_TRUE(lf["after_ms"].is_number());
      EXPECT_DOUBLE_EQ(lf["lost_ms"].get<double>(), lf["before_ms"].get<double>() - lf["after_ms"].get<double>());
      EXPECT_NEAR(b["total_ms"].get<double>(),
                  b["gap_ms"].get<double>() + b["guard_ms"].get<double>() + lf["lost_ms"].get<double>(), 1e-12);
    }
  }
  EXPECT_NE(runtime::explain_costs_text(c).find("lost fusion not measured (the regions cannot be joined"),
            std::string::npos);
}

// kiln explain --cost -o: the session holds the break costs (lost fusion included) of one run and the
// recompile costs; it reads back as written and the reports show both.
TEST(ExplainSession, StoresBreakAndRecompileCostsAndTheReportsShowThem) {
  const std::string model = test::example("shape_branch.pt");
  std::vector<std::vector<InputSpec>> calls;
  for (const char* shape : {"2x16", "3x16", "6x16", "7x16"}) calls.push_back({parse_input_spec(shape)});
  capture::CompileOptions o;
  o.dynamic = false;
  auto m = model::load_model(model);
  auto r = runtime::explain_model(m, calls, o, 1);
  auto c = runtime::measure_explain_costs(m, calls, o, 2, 1);
  const std::string path = test::temp_dir() + "/explain_costs.kiln";
  runtime::write_explain_session(path, model, calls, o, r, &c);
  auto s = session::load_session(path);
  EXPECT_EQ(s.origin, "kiln explain");
  ASSERT_EQ(s.runs.size(), 1u);
  EXPECT_EQ(s.regions.size(), 4u);  // one entry per size
  const auto& rc = s.recompile_costs;
  ASSERT_TRUE(rc.measured());
  EXPECT_EQ(rc.rounds, 2);
  EXPECT_EQ(rc.calls, 4);
  ASSERT_EQ(rc.regions.size(), c.regions.size());
  ASSERT_EQ(rc.regions[0].entries.size(), 4u);
  EXPECT_EQ(rc.regions[0].compile_ms, c.regions[0].compile_ms);
  EXPECT_EQ(rc.regions[0].failed_guard_checks, 1 + 2 + 3);
  EXPECT_EQ(rc.regions[0].failed_guard_ms, c.regions[0].failed_guard_ms);
  EXPECT_EQ(rc.regions[0].entries[1].recompile_reason, c.regions[0].entries[1].recompile_reason);
  EXPECT_EQ(rc.regions[0].entries[1].hits, 1);
  EXPECT_EQ(rc.advice, c.advice);
  ASSERT_TRUE(rc.has_effect);
  EXPECT_EQ(rc.effect.before.compiles, 4);
  EXPECT_EQ(rc.effect.after.dynamic, "true");
  EXPECT_EQ(rc.effect.after.compiles, c.effect.after.compiles);
  EXPECT_EQ(rc.effect.after.warm_call_ms, c.effect.after.warm_call_ms);
  EXPECT_EQ(rc.effect.outputs_equal, c.effect.outputs_equal);

  const std::string md = report::render_markdown(s);
  auto at = md.find("## Recompiles: what they cost");
  ASSERT_NE(at, std::string::npos) << md;
  EXPECT_NE(md.find("| compiles | 4 | " + std::to_string(rc.effect.after.compiles) + " |", at), std::string::npos);
  EXPECT_NE(md.find("region 0: compile ", at), std::string::npos);
  const std::string html = report::render_html(s);
  EXPECT_NE(html.find("<h2>Recompiles: what they cost</h2>"), std::string::npos);
  EXPECT_NE(html.find("<h3>Following the advice, measured</h3>"), std::string::npos);
  auto j = nlohmann::json::parse(report::render_json(s));
  EXPECT_EQ(j["recompile_costs"]["regions"][0]["entries"].size(), 4u);
  EXPECT_EQ(j["recompile_costs"]["dynamic_effect"]["before"]["compiles"], 4);
  EXPECT_EQ(j["recompile_costs"]["calls"], 4);

  // Breaks: weighted_breaks explained with --cost -o; its costs belong to the session's run.
  const std::string wmodel = test::weighted_breaks_model();
  std::vector<std::vector<InputSpec>> one = {{parse_input_spec("32x256")}};
  auto wm = model::load_model(wmodel);
  auto wr = runtime::explain_model(wm, one, {}, 1);
  auto wc = runtime::measure_explain_costs(wm, one, {}, 3, 1);
  const std::string wpath = test::temp_dir() + "/explain_breaks.kiln";
  runtime::write_explain_session(wpath, wmodel, one, {}, wr, &wc);
  auto ws = session::load_session(wpath);
  const int run = report::shown_break_cost_run(ws);
  ASSERT_EQ(run, ws.runs.at(0).id);
  auto costs = report::break_costs_of(ws, run);
  ASSERT_EQ(costs.size(), 3u);
  EXPECT_FALSE(ws.recompile_costs.has_effect);  // one shape
  EXPECT_TRUE(ws.recompile_costs.measured());
  const session::BreakCost* print = nullptr;
  for (const auto& b : costs)
    if (b.break_id == "KB001") print = &b;
  ASSERT_NE(print, nullptr);
  ASSERT_TRUE(print->lost_fusion_checked);
  EXPECT_FALSE(print->lost_fusion.empty());
  const std::string wmd = report::render_markdown(ws);
  EXPECT_NE(wmd.find("; lost fusion "), std::string::npos) << wmd;
  EXPECT_NE(wmd.find("lost fusion not measured (the regions cannot be joined"), std::string::npos) << wmd;
  EXPECT_NE(report::render_html(ws).find("<th>lost fusion</th>"), std::string::npos);
  auto wj = nlohmann::json::parse(report::render_json(ws));
  bool loop_reason = false;
  for (const auto& b : wj["break_costs"])
    if (b["id"] == "KB005") loop_reason = !b["lost_fusion"]["measured"].get<bool>() && !b["lost_fusion"]["reason"].get<std::string>().empty();
  EXPECT_TRUE(loop_reason);

  // Without --cost: the breaks, regions and events, no runs and no costs.
  const std::string plain = test::temp_dir() + "/explain_plain.kiln";
  runtime::write_explain_session(plain, model, calls, o, r, nullptr);
  auto p = session::load_session(plain);
  EXPECT_TRUE(p.runs.empty());
  EXPECT_FALSE(p.recompile_costs.measured());
  EXPECT_EQ(report::render_markdown(p).find("Recompiles: what they cost"), std::string::npos);
  EXPECT_TRUE(nlohmann::json::parse(report::render_json(p))["recompile_costs"].is_null());
}
