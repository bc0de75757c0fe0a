// report::measure_break_costs on crafted timelines (exact numbers), the session store's break_costs
// (round trip, schema 1 files still open) and the reports' ranked list.
#include "engine/report/break_costs.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <nlohmann/json.hpp>

#include "engine/report/render_html.h"
#include "engine/report/render_json.h"
#include "engine/report/render_markdown.h"
#include "engine/session/store.h"
#include "tests/support/paths.h"

using namespace kiln;

namespace {

session::GraphBreakRecord brk(const std::string& id, int line, int ends, int resumes) {
  session::GraphBreakRecord r;
  r.info.id = id;
  r.info.category = capture::BreakCategory::SideEffect;
  r.info.reason = "reason of " + id;
  r.info.loc.file = "model.py";
  r.info.loc.line = line;
  r.info.ends_region = ends;
  r.info.resumes_region = resumes;
  r.hits = 1;
  return r;
}

session::TimelineEvent span(const std::string& category, const std::string& name, int64_t start, int64_t dur,
                            const std::string& kernel = "") {
  session::TimelineEvent e;
  e.run = 1;
  e.lane = "host:0";
  e.category = category;
  e.name = name;
  e.start_ns = start;
  e.dur_ns = dur;
  e.kernel = kernel;
  return e;
}

// Two iterations of 10 ms: region 0, a 1 ms gap (break A), region 1, a 4 ms gap (break B), region 2.
std::vector<session::TimelineEvent> two_iterations() {
  std::vector<session::TimelineEvent> t;
  for (int64_t base : {0LL, 20'000'000LL}) {
    t.push_back(span("iteration", "iteration", base, 10'000'000));
    t.push_back(span("region", "region 0", base + 0, 2'000'000));
    t.push_back(span("guard", "guards [0/0]", base + 100'000, 100'000));
    t.push_back(span("kernel", "k0_relu", base + 1'000'000, 500'000, "k0_relu"));
    t.push_back(span("interpreter", "interpreter: prim::Print", base + 2'200'000, 600'000));
    t.push_back(span("region", "region 1", base + 3'000'000, 1'000'000));
    t.push_back(span("guard", "guards [1/0]", base + 3'000'000, 200'000));
    t.push_back(span("kernel", "k0_mul", base + 3'400'000, 300'000, "k0_mul"));
    t.push_back(span("interpreter", "interpreter: prim::Loop", base + 4'500'000, 3'000'000));
    t.push_back(span("region", "region 2", base + 8'000'000, 2'000'000));
    t.push_back(span("guard", "guards [2/0]", base + 8'000'000, 500'000));
  }
  return t;
}

session::Session crafted() {
  session::Session s;
  s.origin = "kiln profile";
  s.breaks = {brk("KB001", 10, 0, 1), brk("KB005", 20, 1, 2)};
  session::Run eager;
  eager.id = 0;
  eager.mode = "eager";
  eager.backend = "eager";
  session::Run def;
  def.id = 1;
  def.mode = "default";
  def.backend = "kiln";
  s.runs = {eager, def};
  s.timeline = two_iterations();
  s.break_costs = report::measure_break_costs(s.breaks, s.timeline, 1);
  return s;
}

}  // namespace

TEST(BreakCosts, GapsGuardsAndInterpreterPerIterationMostCostlyFirst) {
  auto s = crafted();
  const auto& c = s.break_costs;
  ASSERT_EQ(c.size(), 2u);
  // The loop's gap (4 ms + 0.5 ms of region 2's guards) outweighs the print's (1 ms + 0.2 ms).
  EXPECT_EQ(c[0].break_id, "KB005");
  EXPECT_EQ(c[0].line, 20);
  EXPECT_DOUBLE_EQ(c[0].gap_ms, 4.0);
  EXPECT_DOUBLE_EQ(c[0].interpreter_ms, 3.0);
  EXPECT_DOUBLE_EQ(c[0].guard_ms, 0.5);
  EXPECT_DOUBLE_EQ(c[0].total_ms, 4.5);
  EXPECT_DOUBLE_EQ(c[0].step_ms, 10.0);
  EXPECT_DOUBLE_EQ(c[0].share, 0.45);
  EXPECT_EQ(c[0].iterations, 2);
  EXPECT_EQ(c[0].gaps, 1);
  EXPECT_EQ(c[1].break_id, "KB001");
  EXPECT_DOUBLE_EQ(c[1].gap_ms, 1.0);
  EXPECT_DOUBLE_EQ(c[1].interpreter_ms, 0.6);
  EXPECT_DOUBLE_EQ(c[1].guard_ms, 0.2);
  // Lost fusion is measured apart (commands/lost_fusion): the timeline alone leaves it unchecked.
  EXPECT_FALSE(c[1].lost_fusion_checked);
  EXPECT_EQ(c[1].lost_fusion_ms, 0);
}

TEST(BreakCosts, SitesThatShareAGapSplitIt) {
  std::vector<session::GraphBreakRecord> breaks = {brk("KB001", 10, 0, 1), brk("KB003", 11, 0, 1)};
  auto t = two_iterations();
  auto c = report::measure_break_costs(breaks, t, 1);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_DOUBLE_EQ(c[0].gap_ms, 0.5);
  EXPECT_DOUBLE_EQ(c[1].gap_ms, 0.5);
  EXPECT_EQ(c[0].shared_gaps, 1);
  // Another run's spans, or none, measure nothing.
  EXPECT_TRUE(report::measure_break_costs(breaks, t, 7).empty());
  EXPECT_TRUE(report::measure_break_costs({}, t, 1).empty());
}

TEST(BreakCosts, RankedGroupsFollowTheShownRun) {
  auto s = crafted();
  EXPECT_EQ(report::shown_break_cost_run(s), 1);
  auto groups = report::ranked_break_groups(s);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].first->info.id, "KB005");
  EXPECT_EQ(groups[1].first->info.id, "KB001");
  s.break_costs.clear();
  EXPECT_EQ(report::shown_break_cost_run(s), -1);
  EXPECT_EQ(report::ranked_break_groups(s)[0].first->info.id, "KB001");  // unmeasured: recorded order
}

TEST(BreakCosts, StoredAndReadBack) {
  auto s = crafted();
  s.break_costs[1].lost_fusion_checked = true;
  s.break_costs[1].lost_fusion = "k0_mul [0/0] + k0_add [1/0] -> k0_add [0/0]";
  s.break_costs[1].lost_fusion_ms = 0.25;
  s.break_costs[0].lost_fusion_checked = true;
  s.break_costs[0].lost_fusion_unmeasured = "the regions cannot be joined: a loop";
  const std::string path = test::temp_dir() + "/costs.kiln";
  session::save_session(path, s);
  auto back = session::load_session(path);
  EXPECT_EQ(back.schema_version, session::kSchemaVersion);
  ASSERT_EQ(back.break_costs.size(), s.break_costs.size());
  for (size_t i = 0; i < s.break_costs.size(); ++i) {
    const auto& a = s.break_costs[i];
    const auto& b = back.break_costs[i];
    EXPECT_EQ(a.run, b.run);
    EXPECT_EQ(a.break_id, b.break_id);
    EXPECT_EQ(a.reason, b.reason);
    EXPECT_EQ(a.file, b.file);
    EXPECT_EQ(a.line, b.line);
    EXPECT_EQ(a.gaps, b.gaps);
    EXPECT_EQ(a.shared_gaps, b.shared_gaps);
    EXPECT_EQ(a.iterations, b.iterations);
    EXPECT_EQ(a.gap_ms, b.gap_ms);
    EXPECT_EQ(a.interpreter_ms, b.interpreter_ms);
    EXPECT_EQ(a.guard_ms, b.guard_ms);
    EXPECT_EQ(a.total_ms, b.total_ms);
    EXPECT_EQ(a.step_ms, b.step_ms);
    EXPECT_EQ(a.share, b.share);
    EXPECT_EQ(a.fusion_pair, b.fusion_pair);
    EXPECT_EQ(a.fusion_pair_ms, b.fusion_pair_ms);
    EXPECT_EQ(a.lost_fusion_checked, b.lost_fusion_checked);
    EXPECT_EQ(a.lost_fusion, b.lost_fusion);
    EXPECT_EQ(a.lost_fusion_ms, b.lost_fusion_ms);
    EXPECT_EQ(a.lost_fusion_unmeasured, b.lost_fusion_unmeasured);
  }
  EXPECT_FALSE(back.recompile_costs.measured());
}

session::RecompileCosts crafted_recompile_costs() {
  session::RecompileCosts c;
  c.rounds = 3;
  c.calls = 2;
  session::RegionRecompileCost r;
  r.region = 0;
  r.entries = {{"[0/0]", 2.5, 1, ""}, {"[0/1]", 1.5, 1, "tensor 'x' size mismatch at index 0. expected 4, actual 8"}};
  r.compile_ms = 4.0;
  r.failed_guard_checks = 1;
  r.failed_guard_ms = 0.002;
  r.eager_fallback_calls = 2;
  r.eager_fallback_ms = 0.75;
  r.limit_reached = true;
  c.regions = {r};
  c.pass = {"false", 2, 4.0, 5.0, 0.1, 0.002, 0.75};
  c.advice = {"dimension 0 of 'x' changed in 1 recompiles (sizes 4, 8): compile with dynamic=True"};
  c.has_effect = true;
  c.effect.advice = c.advice[0];
  c.effect.before = c.pass;
  c.effect.after = {"true", 1, 3.0, 3.5, 0.09, 0.0, 0.0};
  c.effect.outputs_equal = true;
  c.effect.max_abs_diff = 0;
  return c;
}

TEST(RecompileCosts, StoredAndReadBackAndRendered) {
  auto s = crafted();
  s.recompile_costs = crafted_recompile_costs();
  s.recompile_costs.regions[0].entries[1].recompile_reason = "<script>size</script>";
  const std::string path = test::temp_dir() + "/recompile_costs.kiln";
  session::save_session(path, s);
  auto back = session::load_session(path);
  const auto& a = s.recompile_costs;
  const auto& b = back.recompile_costs;
  ASSERT_TRUE(b.measured());
  EXPECT_EQ(b.rounds, 3);
  EXPECT_EQ(b.calls, 2);
  ASSERT_EQ(b.regions.size(), 1u);
  EXPECT_EQ(b.regions[0].region, 0);
  EXPECT_EQ(b.regions[0].compile_ms, 4.0);
  EXPECT_EQ(b.regions[0].failed_guard_checks, 1);
  EXPECT_EQ(b.regions[0].failed_guard_ms, 0.002);
  EXPECT_EQ(b.regions[0].eager_fallback_calls, 2);
  EXPECT_EQ(b.regions[0].eager_fallback_ms, 0.75);
  EXPECT_TRUE(b.regions[0].limit_reached);
  ASSERT_EQ(b.regions[0].entries.size(), 2u);
  EXPECT_EQ(b.regions[0].entries[1].compile_id, "[0/1]");
  EXPECT_EQ(b.regions[0].entries[1].compile_ms, 1.5);
  EXPECT_EQ(b.regions[0].entries[1].recompile_reason, a.regions[0].entries[1].recompile_reason);
  EXPECT_EQ(b.advice, a.advice);
  EXPECT_EQ(b.pass.dynamic, "false");
  EXPECT_EQ(b.pass.cold_ms, 5.0);
  ASSERT_TRUE(b.has_effect);
  EXPECT_EQ(b.effect.after.compiles, 1);
  EXPECT_EQ(b.effect.after.warm_call_ms, 0.09);
  EXPECT_TRUE(b.effect.outputs_equal);

  const std::string md = report::render_markdown(back);
  auto at = md.find("## Recompiles: what they cost");
  ASSERT_NE(at, std::string::npos) << md;
  EXPECT_NE(md.find("region 0: compile 4.000 ms over 2 cache entries, failed guard checks 1 (0.002 ms), ran eagerly "
                    "after the recompile limit 2x (0.750 ms)",
                    at),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| compiles | 2 | 1 |", at), std::string::npos) << md;
  EXPECT_NE(md.find("outputs equal the first configuration's", at), std::string::npos);
  const std::string html = report::render_html(back);
  EXPECT_NE(html.find("<h2>Recompiles: what they cost</h2>"), std::string::npos);
  EXPECT_NE(html.find("<td>2x (0.750 ms)</td>"), std::string::npos);
  EXPECT_EQ(html.find("<script>size"), std::string::npos);  // escaped like every other field
  auto j = nlohmann::json::parse(report::render_json(back));
  EXPECT_EQ(j["recompile_costs"]["regions"][0]["eager_fallback_calls"], 2);
  EXPECT_EQ(j["recompile_costs"]["dynamic_effect"]["after"]["dynamic"], "true");
}

// A schema-2 file written before lost fusion and recompile costs were stored: no such columns or
// tables. It opens, its costs read as not checked, and the reports leave the new parts out.
TEST(RecompileCosts, EarlierSchemaTwoSessionsStillOpen) {
  auto s = crafted();
  s.recompile_costs = crafted_recompile_costs();
  const std::string path = test::temp_dir() + "/v2_early.kiln";
  session::save_session(path, s);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "DROP TABLE recompile_costs; DROP TABLE recompile_summary; "
                         "ALTER TABLE break_costs DROP COLUMN lost_fusion_checked; "
                         "ALTER TABLE break_costs DROP COLUMN lost_fusion; "
                         "ALTER TABLE break_costs DROP COLUMN lost_fusion_ms; "
                         "ALTER TABLE break_costs DROP COLUMN lost_fusion_unmeasured",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  auto back = session::load_session(path);
  EXPECT_EQ(back.schema_version, 2);
  ASSERT_EQ(back.break_costs.size(), s.break_costs.size());
  EXPECT_EQ(back.break_costs[0].total_ms, s.break_costs[0].total_ms);
  for (const auto& c : back.break_costs) {
    EXPECT_FALSE(c.lost_fusion_checked);
    EXPECT_EQ(report::lost_fusion_text(c), "not checked");
  }
  EXPECT_FALSE(back.recompile_costs.measured());
  EXPECT_EQ(report::render_markdown(back).find("Recompiles: what they cost"), std::string::npos);
  EXPECT_EQ(report::render_html(back).find("Recompiles: what they cost"), std::string::npos);
  EXPECT_TRUE(nlohmann::json::parse(report::render_json(back))["recompile_costs"].is_null());
}

// A file as schema 1 wrote it: no break_costs table, schema_version 1 in meta.
TEST(BreakCosts, SchemaOneSessionsStillOpen) {
  auto s = crafted();
  const std::string path = test::temp_dir() + "/v1.kiln";
  session::save_session(path, s);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "DROP TABLE break_costs; UPDATE meta SET value = '1' WHERE key = 'schema_version'",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  auto back = session::load_session(path);
  EXPECT_EQ(back.schema_version, 1);
  EXPECT_TRUE(back.break_costs.empty());
  EXPECT_EQ(back.breaks.size(), 2u);
  EXPECT_EQ(back.timeline.size(), s.timeline.size());
  // And a file committed before schema 2 existed.
  auto old = session::load_session(test::data("sessions/mlp_b64_h100.kiln"));
  EXPECT_EQ(old.schema_version, 1);
  EXPECT_FALSE(old.runs.empty());
  EXPECT_TRUE(old.break_costs.empty());
}

TEST(BreakCosts, ReportsShowTheRankedList) {
  auto s = crafted();
  const std::string md = report::render_markdown(s);
  auto loop = md.find("KB005"), print = md.find("KB001");
  ASSERT_NE(loop, std::string::npos);
  ASSERT_NE(print, std::string::npos);
  EXPECT_LT(loop, print);
  EXPECT_NE(md.find("costs **4.500 ms (45.0% of the step)**"), std::string::npos) << md;
  const std::string html = report::render_html(s);
  EXPECT_NE(html.find("<td>4.500 ms</td>"), std::string::npos);
  EXPECT_LT(html.find("KB005"), html.find("KB001"));
  const std::string json = report::render_json(s);
  EXPECT_NE(json.find("\"break_costs\""), std::string::npos);
  EXPECT_NE(json.find("\"total_ms\": 4.5"), std::string::npos);
  // Text from the session is escaped in HTML like every other field.
  s.break_costs[1].lost_fusion_checked = true;
  s.break_costs[1].lost_fusion = "<script>";
  EXPECT_EQ(report::render_html(s).find("<script>"), std::string::npos);
}
