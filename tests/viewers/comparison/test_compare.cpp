// File > Compare with...: the comparison's models, the comparison panel and the main window's
// compare job, on the example block profiled at batch 2 (A) and at batch 4 (B).
#include <QSignalSpy>
#include <QTableView>
#include <QTest>
#include <gtest/gtest.h>

#include "engine/api/report.h"
#include "tests/support/paths.h"
#include "tests/viewers/app/session_fixtures.h"
#include "tests/viewers/app/view_fixtures.h"
#include "viewers/comparison/comparison_panel.h"
#include "viewers/comparison/diff_models.h"
#include "viewers/main/main_window.h"

using namespace kiln;
using namespace kiln::viewers;
namespace dt = kiln::report::diff_text;

namespace {
// A StructureModel that QAbstractItemModelTester checks on every change.
struct CheckedStructure : StructureModel {
  explicit CheckedStructure(Kind kind) : StructureModel(kind) {}
  QAbstractItemModelTester tester{this, QAbstractItemModelTester::FailureReportingMode::Fatal};
};
QString text(const QAbstractItemModel& m, int row, int column) {
  return m.data(m.index(row, column)).toString();
}
}  // namespace

TEST(TimeChangeTone, IsLog2OfTheRatioClampedToTwiceEitherWay) {
  EXPECT_DOUBLE_EQ(time_change_tone(1.0, 2.0), 1.0);
  EXPECT_DOUBLE_EQ(time_change_tone(2.0, 1.0), -1.0);
  EXPECT_DOUBLE_EQ(time_change_tone(1.0, 8.0), 1.0);
  EXPECT_DOUBLE_EQ(time_change_tone(1.0, 1.0), 0.0);
  EXPECT_NEAR(time_change_tone(1.0, 1.5), 0.585, 1e-3);
  EXPECT_DOUBLE_EQ(time_change_tone(-1.0, 2.0), 0.0);  // a side without the row
  EXPECT_DOUBLE_EQ(time_change_tone(1.0, 0.0), 0.0);
}

TEST(RunPairModel, ShowsEachPairAsKilnDiffPrintsIt) {
  const auto c = test::block_comparison();
  test::CheckedModel<RunPairModel> m;
  m.setDiff(c->diff);
  ASSERT_EQ(m.rowCount(), 2);  // eager / eager and default / kiln on both sides
  for (int r = 0; r < m.rowCount(); ++r) {
    const auto& p = c->diff->runs[size_t(r)];
    ASSERT_TRUE(p.a && p.b);
    const auto v = dt::run_values(p);
    EXPECT_EQ(text(m, r, RunPairModel::Run).toStdString(), v.label);
    EXPECT_EQ(text(m, r, RunPairModel::MedianA).toStdString(), v.median_a);
    EXPECT_EQ(text(m, r, RunPairModel::MedianB).toStdString(), v.median_b);
    EXPECT_EQ(text(m, r, RunPairModel::Ratio).toStdString(), v.ratio);
    EXPECT_NE(v.ratio, "-");
    EXPECT_EQ(m.data(m.index(r, 0), Qt::UserRole).toInt(), p.a->id);
  }
  EXPECT_EQ(text(m, 0, RunPairModel::Run), "eager / eager");
  EXPECT_EQ(text(m, 1, RunPairModel::Run), "default / kiln");
  m.setDiff(nullptr);
  EXPECT_EQ(m.rowCount(), 0);
}

TEST(StructureModel, ModulesInTreeOrderWithBothSidesAndTheirDifference) {
  const auto c = test::block_comparison();
  const auto& st = c->diff->structure;
  ASSERT_TRUE(st.a.present && st.b.present);
  CheckedStructure m(StructureModel::Kind::Modules);
  m.setDiff(c->diff);
  ASSERT_EQ(m.rowCount(), int(st.modules.size()));
  EXPECT_EQ(text(m, 0, StructureModel::Key), "(model)");
  bool saw_qkv = false;
  for (int r = 0; r < m.rowCount(); ++r) {
    const auto& l = st.modules[size_t(r)];
    EXPECT_EQ(text(m, r, StructureModel::A).toStdString(), dt::ms_or_dash(l.a_ms));
    EXPECT_EQ(text(m, r, StructureModel::B).toStdString(), dt::ms_or_dash(l.b_ms));
    EXPECT_EQ(text(m, r, StructureModel::Delta).toStdString(), dt::delta(l.a_ms, l.b_ms));
    if (l.key == "qkv") {
      saw_qkv = true;
      EXPECT_EQ(text(m, r, StructureModel::Key), "  qkv");  // indented under the model
      EXPECT_EQ(text(m, r, StructureModel::Ratio), QString::number(l.b_ms / l.a_ms, 'f', 2) + "x");
    }
  }
  EXPECT_TRUE(saw_qkv);
  // The model's inclusive row holds the whole attributed time of each side.
  EXPECT_NEAR(st.modules.front().a_ms, st.a.total_ms * st.a.module_coverage, 1e-6);
}

TEST(StructureModel, LinesLargestFirstWithTheirCode) {
  const auto c = test::block_comparison();
  CheckedStructure m(StructureModel::Kind::Lines);
  m.setDiff(c->diff);
  ASSERT_GT(m.rowCount(), 3);
  EXPECT_TRUE(text(m, 0, StructureModel::Key).startsWith("sample_models.py:"));
  EXPECT_FALSE(text(m, 0, StructureModel::Code).isEmpty());
  auto larger = [&](int r) {
    const auto& l = c->diff->structure.lines;
    for (const auto& x : l)
      if (QString::fromStdString(x.key) == text(m, r, StructureModel::Key)) return std::max(x.a_ms, x.b_ms);
    return -1.0;
  };
  for (int r = 1; r < m.rowCount(); ++r) EXPECT_GE(larger(r - 1), larger(r)) << r;
}

TEST(ComparisonPanel, ShowsBothSidesWhileComparingAndOneSessionAfter) {
  test::PanelOn<ComparisonPanel> shown(1200, 800, test::profiled_block());
  auto& [ctx, panel] = shown;
  EXPECT_FALSE(panel.comparing());
  ctx.setComparison(test::block_comparison());
  ASSERT_TRUE(panel.comparing());
  EXPECT_EQ(panel.runPairs()->model()->rowCount(), 2);
  EXPECT_EQ(panel.modules()->model()->rowCount(), int(test::block_comparison()->diff->structure.modules.size()));
  EXPECT_GT(panel.lines()->model()->rowCount(), 0);
  const QString sides = panel.sidesText();
  EXPECT_TRUE(sides.contains("A  block.kiln")) << sides.toStdString();
  EXPECT_TRUE(sides.contains("B  block_batch4.kiln")) << sides.toStdString();
  EXPECT_TRUE(panel.changesText().contains("0 added in B, 0 removed, 0 in both")) << panel.changesText().toStdString();
  EXPECT_TRUE(panel.changesText().contains("Compiled regions: 1 differ")) << panel.changesText().toStdString();
  // Picking a pair selects A's run of it.
  panel.runPairs()->selectRow(1);
  EXPECT_EQ(ctx.current().run, test::block_comparison()->diff->runs[1].a->id);
  ctx.setComparison(nullptr);
  EXPECT_FALSE(panel.comparing());
  ctx.setComparison(test::block_comparison());
  ctx.setSession(test::profiled_block());  // a new session ends the comparison
  EXPECT_FALSE(ctx.current().compare);
  EXPECT_FALSE(panel.comparing());
}

TEST(MainWindow, CompareWithOpensTheSecondSessionInEveryPanel) {
  MainWindow w;
  w.setErrorBoxes(false);
  QSignalSpy opened(&w, &MainWindow::sessionOpened);
  QSignalSpy compared(&w, &MainWindow::comparisonOpened);
  QSignalSpy failed(&w, &MainWindow::errorShown);
  w.compareWith(QString::fromStdString(test::profiled_block_batch4_path()));  // nothing open yet
  ASSERT_EQ(failed.size(), 1);
  EXPECT_TRUE(failed.first().first().toString().contains("block_batch4.kiln"));
  w.open(QString::fromStdString(test::profiled_block_path()));
  for (int i = 0; i < 600 && opened.isEmpty(); ++i) QTest::qWait(50);
  ASSERT_EQ(opened.size(), 1);
  w.compareWith(QString::fromStdString(test::profiled_block_batch4_path()));
  for (int i = 0; i < 600 && compared.isEmpty() && failed.size() == 1; ++i) QTest::qWait(50);
  ASSERT_EQ(compared.size(), 1) << (failed.size() > 1 ? failed.last().first().toString().toStdString() : "");
  const auto& sel = w.selection()->current();
  ASSERT_TRUE(sel.compare && sel.compare->diff && sel.compare->session);
  EXPECT_EQ(sel.compare->diff->runs.size(), 2u);
  EXPECT_EQ(sel.compare->diff->b.label, test::profiled_block_batch4_path());
  EXPECT_TRUE(qobject_cast<ComparisonPanel*>(w.panel("comparison"))->comparing());
  // A side that cannot be read is one message naming it; the comparison shown stays.
  const std::string bad = test::temp_dir() + "/no-such-run.kiln";
  w.compareWith(QString::fromStdString(bad));
  for (int i = 0; i < 600 && failed.size() == 1; ++i) QTest::qWait(50);
  ASSERT_EQ(failed.size(), 2);
  EXPECT_TRUE(failed.last().first().toString().contains("no-such-run.kiln: file not found")) << failed.last().first().toString().toStdString();
  EXPECT_TRUE(w.selection()->current().compare);
  w.endComparison();
  EXPECT_FALSE(w.selection()->current().compare);
}
