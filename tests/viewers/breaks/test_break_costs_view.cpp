// The breaks panel's cost columns with lost fusion, and the guards panel's recompile costs, on a
// crafted session with known values.
#include <QLabel>
#include <QTableView>
#include <gtest/gtest.h>

#include "tests/viewers/app/session_fixtures.h"
#include "tests/viewers/app/view_fixtures.h"
#include "viewers/breaks/break_table_model.h"
#include "viewers/breaks/breaks_panel.h"
#include "viewers/guards/guards_panel.h"

using namespace kiln;
using namespace kiln::viewers;

namespace {

// crafted_session() with a measured run: the print's lost fusion measured, the item()'s not.
std::shared_ptr<const session::Session> with_costs() {
  auto s = std::make_shared<session::Session>(*test::crafted_session());
  session::BreakCost print;
  print.run = s->runs.empty() ? 0 : s->runs[0].id;
  print.break_id = "KB001";
  print.reason = "print() is a side effect";
  print.file = "/elsewhere/sample_models.py";
  print.line = 42;
  print.iterations = 5;
  print.gap_ms = 0.1;
  print.guard_ms = 0.02;
  print.lost_fusion_checked = true;
  print.lost_fusion = "k0_mul [0/0] + k0_add [1/0] -> k0_add [0/0]";
  print.lost_fusion_ms = 0.5;
  print.total_ms = 0.62;
  print.step_ms = 2;
  print.share = 0.31;
  session::BreakCost item = print;
  item.break_id = "KB003";
  item.reason = "Tensor.item() reads a value out of a tensor";
  item.line = 47;
  item.lost_fusion = "";
  item.lost_fusion_ms = 0;
  item.lost_fusion_unmeasured = "data-dependent control flow: the regions join only by running both branches";
  item.total_ms = 0.12;
  item.share = 0.06;
  s->break_costs = {print, item};
  session::RecompileCosts rc;
  rc.rounds = 3;
  rc.calls = 2;
  session::RegionRecompileCost r;
  r.region = 0;
  r.entries = {{"[0/0]", 2.5, 1, ""}, {"[0/1]", 1.5, 1, "tensor 'x' size mismatch at index 0. expected 4, actual 8"}};
  r.compile_ms = 4.0;
  r.failed_guard_checks = 1;
  r.failed_guard_ms = 0.002;
  rc.regions = {r};
  rc.pass = {"auto", 2, 4.0, 5.0, 0.1, 0.002, 0.0};
  rc.advice = {"dimension 0 of 'x' changed in 1 recompiles (sizes 4, 8): compile with dynamic=True"};
  rc.has_effect = true;
  rc.effect.advice = rc.advice[0];
  rc.effect.before = rc.pass;
  rc.effect.after = {"true", 1, 3.0, 3.5, 0.09, 0.0, 0.0};
  rc.effect.outputs_equal = true;
  s->recompile_costs = rc;
  return s;
}

}  // namespace

TEST(BreakTableModel, LostFusionColumnAndTooltips) {
  test::CheckedModel<BreakTableModel> model(with_costs());
  ASSERT_EQ(model.rowCount(), 2);
  // Most costly first: the print's 0.62 ms, lost fusion included.
  EXPECT_EQ(model.data(model.index(0, BreakTableModel::Id)).toString(), "KB001");
  EXPECT_EQ(model.headerData(BreakTableModel::LostFusion, Qt::Horizontal).toString(), "Lost fusion");
  EXPECT_EQ(model.data(model.index(0, BreakTableModel::Cost)).toString(), "0.620 ms");
  EXPECT_EQ(model.data(model.index(0, BreakTableModel::LostFusion)).toString(), "0.500 ms");
  EXPECT_EQ(model.data(model.index(1, BreakTableModel::LostFusion)).toString(), "not measured");
  const QString tip = model.data(model.index(0, BreakTableModel::LostFusion), Qt::ToolTipRole).toString();
  EXPECT_TRUE(tip.contains("k0_mul [0/0] + k0_add [1/0] -> k0_add [0/0]")) << tip.toStdString();
  EXPECT_TRUE(model.data(model.index(1, BreakTableModel::LostFusion), Qt::ToolTipRole)
                  .toString()
                  .contains("not measured (data-dependent control flow"));
  EXPECT_TRUE(model.data(model.index(0, BreakTableModel::Cost), Qt::ToolTipRole).toString().contains("lost fusion: 0.500 ms"));
}

TEST(GuardsPanel, ShowsWhatRecompilesCostAndSaysWhenNotMeasured) {
  SelectionContext ctx;
  GuardsPanel panel(&ctx);
  ctx.setSession(with_costs(), "");
  const QString text = panel.recompileCostsText();
  EXPECT_TRUE(text.contains("region 0: compile 4.000 ms over 2 cache entries, failed guard checks 1 (0.002 ms)"))
      << text.toStdString();
  EXPECT_TRUE(text.contains("because: tensor 'x' size mismatch")) << text.toStdString();
  EXPECT_TRUE(text.contains("Following the advice, measured")) << text.toStdString();
  EXPECT_TRUE(text.contains("outputs equal the first configuration's")) << text.toStdString();
  ctx.setSession(test::crafted_session(), "");
  EXPECT_TRUE(panel.recompileCostsText().contains("Not measured in this session")) << panel.recompileCostsText().toStdString();
}
