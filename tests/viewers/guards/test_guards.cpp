#include <QComboBox>
#include <QListWidget>
#include <QTableView>
#include <QTreeView>
#include <gtest/gtest.h>

#include "tests/viewers/app/session_fixtures.h"
#include "tests/viewers/app/view_fixtures.h"
#include "viewers/guards/guard_diff.h"
#include "viewers/guards/guard_diff_model.h"
#include "viewers/guards/guard_tree_model.h"
#include "viewers/guards/guards_panel.h"
#include "viewers/guards/recompile_table_model.h"

using namespace kiln;
using namespace kiln::viewers;

TEST(GuardDiff, PairsGuardsByWhatTheyCheck) {
  auto d = diff_guards({"x.dtype == float32", "x.size(0) == 4", "x.size(1) == 64", "x.requires_grad == False"},
                       {"x.dtype == float32", "x.size(0) == s0", "x.size(1) == 64", "s0 > 1"});
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0].kind, GuardChange::Kind::Changed);
  EXPECT_EQ(d[0].before, "x.size(0) == 4");
  EXPECT_EQ(d[0].after, "x.size(0) == s0");
  EXPECT_EQ(d[1].kind, GuardChange::Kind::Removed);
  EXPECT_EQ(d[1].before, "x.requires_grad == False");
  EXPECT_EQ(d[2].kind, GuardChange::Kind::Added);
  EXPECT_EQ(d[2].after, "s0 > 1");
  EXPECT_TRUE(diff_guards({"a == 1"}, {"a == 1"}).empty());
}

TEST(GuardDiff, DynamoTensorMatchGuardsPairByTensor) {
  EXPECT_EQ(guard_key("TENSOR_MATCH: check_tensor(L['x'], Tensor, size=[4, 64])"), "TENSOR_MATCH: check_tensor(L['x']");
  auto d = diff_guards({"TENSOR_MATCH: check_tensor(L['x'], Tensor, size=[4, 64])"},
                       {"TENSOR_MATCH: check_tensor(L['x'], Tensor, size=[None, 64])"});
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].kind, GuardChange::Kind::Changed);
}

TEST(GuardTreeModel, RegionsEntriesGuardsAndSymbols) {
  test::CheckedModel<GuardTreeModel> model(test::crafted_session());
  ASSERT_EQ(model.rowCount(), 2);  // region 0 ([0/0], [0/1]) and region 1
  QModelIndex r0 = model.index(0, 0);
  ASSERT_EQ(model.rowCount(r0), 2);
  QModelIndex e01 = model.index(1, 0, r0);
  EXPECT_EQ(model.data(e01).toString(), "[0/1]");
  EXPECT_EQ(model.rowCount(e01), 5);  // 4 guards + 1 symbol
  EXPECT_EQ(model.data(model.index(4, GuardTreeModel::Kind, e01)).toString(), "symbol");
  EXPECT_EQ(model.compileId(model.index(0, 0, e01)), "[0/1]");
  EXPECT_EQ(model.data(model.index(1, GuardTreeModel::Reason, r0)).toString().left(15), "tensor 'x' size");
  EXPECT_EQ(model.entryIndex("[1/0]").parent().row(), 1);
  EXPECT_EQ(model.data(model.index(0, GuardTreeModel::Hits)).toLongLong(), 20);
}

TEST(GuardTreeModel, ImportedTraceGroupsEntriesByFrame) {
  test::CheckedModel<GuardTreeModel> model(test::imported_breaky_trace());
  ASSERT_EQ(model.rowCount(), 4);
  for (int r = 0; r < 4; ++r) EXPECT_EQ(model.rowCount(model.index(r, 0)), 2);
  EXPECT_EQ(region_of_compile_id("[3/1]"), 3);
  EXPECT_EQ(region_of_compile_id("[12/0_1]"), 12);
  EXPECT_EQ(region_of_compile_id("nope"), -1);
}

TEST(RecompileTableModel, HistoryWithFailingGuards) {
  test::CheckedModel<RecompileTableModel> model(test::imported_breaky_trace().get());
  EXPECT_EQ(model.rowCount(), 4);
  model.setSession(test::crafted_session().get());
  ASSERT_EQ(model.rowCount(), 2);  // the recompile and the limit event
  EXPECT_EQ(model.data(model.index(0, RecompileTableModel::CompileId)).toString(), "[0/1]");
  EXPECT_FALSE(model.data(model.index(1, RecompileTableModel::Limit)).toString().isEmpty());
}

TEST(GuardDiffModel, PassesTheModelTester) {
  test::CheckedModel<GuardDiffModel> model;
  auto s = test::crafted_session();
  model.setChanges(diff_guards(s->regions[0].guards, s->regions[2].guards), "[0/0]", "[0/1]");
  EXPECT_EQ(model.rowCount(), 2);
  EXPECT_EQ(model.headerData(GuardDiffModel::After, Qt::Horizontal).toString(), "In [0/1]");
}

TEST(GuardsPanel, EntrySelectionFollowsTheContextBothWays) {
  SelectionContext ctx;
  GuardsPanel panel(&ctx);
  ctx.setSession(test::imported_breaky_trace(), "");
  auto* model = static_cast<GuardTreeModel*>(panel.tree()->model());
  // Picking an entry in the tree selects its region.
  panel.tree()->setCurrentIndex(model->entryIndex("[2/1]"));
  EXPECT_EQ(ctx.current().compile_id, "[2/1]");
  // ...and it is diffed against the entry before it: the size guard changed.
  EXPECT_EQ(panel.findChild<QComboBox*>("diffBefore")->currentText(), "[2/0]");
  EXPECT_GT(panel.diff()->model()->rowCount(), 0);
  bool changed = false;
  for (int r = 0; r < panel.diff()->model()->rowCount(); ++r)
    changed |= panel.diff()->model()->index(r, 0).data().toString() == "changed";
  EXPECT_TRUE(changed);
  // A region selected elsewhere becomes the tree's current entry.
  ctx.setRegion("[1/0]");
  EXPECT_EQ(model->compileId(panel.tree()->currentIndex()), "[1/0]");
  EXPECT_EQ(panel.recompiles()->model()->rowCount(), 4);
}

TEST(GuardsPanel, ListsRecompileLimitEvents) {
  SelectionContext ctx;
  GuardsPanel panel(&ctx);
  ctx.setSession(test::crafted_session(), "");
  // The first entry of a region is compared with the entry that replaced it.
  EXPECT_EQ(panel.findChild<QComboBox*>("diffBefore")->currentText(), "[0/0]");
  EXPECT_EQ(panel.findChild<QComboBox*>("diffAfter")->currentText(), "[0/1]");
  EXPECT_EQ(panel.diff()->model()->rowCount(), 2);  // x.size(0) changed, s0 > 1 added
  ASSERT_EQ(panel.limitEvents()->count(), 1);
  EXPECT_TRUE(panel.limitEvents()->item(0)->text().contains("recompile limit"));
  panel.recompiles()->selectRow(0);
  EXPECT_EQ(ctx.current().compile_id, "[0/1]");
}
