#include <QListWidget>
#include <QTableView>
#include <gtest/gtest.h>

#include "tests/viewers/app/session_fixtures.h"
#include "tests/viewers/app/view_fixtures.h"
#include "viewers/comparison/comparison_panel.h"
#include "engine/api/report.h"
#include "viewers/comparison/run_table_model.h"
#include "viewers/comparison/speedup_chart.h"

using namespace kiln;
using namespace kiln::viewers;

namespace {
bool has(const std::vector<std::string>& lines, const std::string& text) {
  for (const auto& l : lines)
    if (l.find(text) != std::string::npos) return true;
  return false;
}
session::Run run(int id, const std::string& mode, double median, double speedup) {
  session::Run r;
  r.id = id;
  r.mode = mode;
  r.backend = mode == "eager" ? "eager" : "kiln";
  r.latency.median_ms = median;
  r.speedup_vs_eager = speedup;
  return r;
}
}  // namespace

TEST(Observations, CraftedSessionSaysWhatTheDataShows) {
  auto o = report::observations(*test::crafted_session());
  for (const char* said : {"mode reduce-overhead was skipped: needs an NVIDIA GPU (no driver)",
                           "default is slower than eager (0.80x): the GPU is busy only 29 % of the time — try "
                           "reduce-overhead",
                           "max-autotune is 2.00x faster than eager",
                           "max error vs eager 3e-02 exceeds 1e-03 in max-autotune",
                           "default launches 5 kernels per iteration instead of 12 (fusion saves 7)",
                           "2 distinct graph break(s)", "1 recompile(s)"})
    EXPECT_TRUE(has(o, said)) << said;
  EXPECT_FALSE(has(o, "max error vs eager 3e-02 exceeds 1e-03 in default"));
}

TEST(Observations, ReduceOverheadSavesLaunchesAndCompilePaysBack) {
  session::Session s;
  auto eager = run(0, "eager", 2.0, 1.0);
  auto def = run(1, "default", 1.0, 2.0);
  def.kernels_per_iter = 10;
  def.compile_cold_ms = 50;
  auto ro = run(2, "reduce-overhead", 0.8, 2.5);
  ro.kernels_per_iter = 1;
  s.runs = {eager, def, ro};
  auto o = report::observations(s);
  EXPECT_TRUE(has(o, "reduce-overhead saves 9 launches per iteration over default"));
  EXPECT_TRUE(has(o, "default pays back its 50.0 ms cold compile after 50 iterations"));
  EXPECT_FALSE(has(o, "slower"));
  EXPECT_FALSE(has(o, "skipped"));
}

TEST(Observations, HostOverheadAndFailuresAndEmptySessions) {
  EXPECT_TRUE(report::observations(session::Session{}).empty());
  session::Session s;
  auto eager = run(0, "eager", 1.0, 1.0);
  auto def = run(1, "default", 1.0, 1.0);
  def.host_overhead_ms = 0.5;
  auto failed = run(2, "max-autotune", 0, 0);
  failed.status = "failed: out of memory";
  s.runs = {eager, def, failed};
  auto o = report::observations(s);
  EXPECT_TRUE(has(o, "in default guards and the interpreter take 50 % of each iteration"));
  EXPECT_TRUE(has(o, "mode max-autotune failed: out of memory"));
  // Without an eager run there is nothing to compare against.
  s.runs = {def};
  EXPECT_FALSE(has(report::observations(s), "eager"));
}

TEST(RunTableModel, RowsPerRunUnderTheModelTester) {
  test::CheckedModel<RunTableModel> model(test::profiled_block());
  ASSERT_EQ(model.rowCount(), 2);
  EXPECT_EQ(model.data(model.index(0, RunTableModel::Mode)).toString(), "eager");
  EXPECT_EQ(model.data(model.index(0, RunTableModel::Speedup)).toString(), "1.00x");
  model.setSession(test::crafted_session());
  ASSERT_EQ(model.rowCount(), 4);
  EXPECT_EQ(model.data(model.index(3, RunTableModel::Median)).toString(), "");  // skipped: no figures
  EXPECT_EQ(model.data(model.index(2, RunTableModel::MaxError)).toString(), "3.0e-02");
  EXPECT_EQ(model.rowOfRun(2), 2);
}

TEST(ComparisonPanel, RowSelectsRunAndRunSelectsRow) {
  SelectionContext ctx;
  ComparisonPanel panel(&ctx);
  ctx.setSession(test::crafted_session(), "");
  EXPECT_EQ(panel.chart()->barCount(), 3);  // the skipped run has no bar
  EXPECT_GT(panel.observations()->count(), 3);
  panel.table()->selectRow(2);
  EXPECT_EQ(ctx.current().run, 2);
  ctx.setRun(1);
  EXPECT_EQ(panel.table()->currentIndex().row(), 1);
}
