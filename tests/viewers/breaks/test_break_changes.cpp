// The breaks panel's list of breaks added and removed while two sessions are compared.
#include <QTableView>
#include <gtest/gtest.h>

#include "tests/viewers/app/session_fixtures.h"
#include "tests/viewers/app/view_fixtures.h"
#include "viewers/breaks/break_changes.h"
#include "viewers/breaks/breaks_panel.h"

using namespace kiln;
using namespace kiln::viewers;

namespace {
report::BreakChange change(report::Change c, const std::string& where, int a, int b) {
  report::BreakChange x;
  x.change = c;
  x.where = where;
  x.reason = "print() has side effects\nmore";
  x.hits_a = a;
  x.hits_b = b;
  return x;
}
}  // namespace

TEST(BreakChangeModel, AddedThenRemovedThenBoth) {
  auto d = std::make_shared<report::SessionDiff>();
  d->breaks = {change(report::Change::Both, "m.py:3", 2, 2), change(report::Change::Removed, "m.py:7", 1, 0),
               change(report::Change::Added, "m.py:9", 0, 4)};
  test::CheckedModel<BreakChangeModel> m;
  m.setDiff(d);
  ASSERT_EQ(m.rowCount(), 3);
  auto cell = [&](int r, int c) { return m.data(m.index(r, c)).toString(); };
  EXPECT_EQ(cell(0, BreakChangeModel::Change), "added in B");
  EXPECT_EQ(cell(0, BreakChangeModel::Location), "m.py:9");
  EXPECT_EQ(cell(0, BreakChangeModel::HitsA), "–");
  EXPECT_EQ(cell(0, BreakChangeModel::HitsB), "4");
  EXPECT_EQ(cell(1, BreakChangeModel::Change), "removed in B");
  EXPECT_EQ(cell(1, BreakChangeModel::HitsB), "–");
  EXPECT_EQ(cell(2, BreakChangeModel::Change), "in both");
  EXPECT_EQ(cell(2, BreakChangeModel::Reason), "print() has side effects");
  EXPECT_EQ(m.count(report::Change::Added), 1);
  EXPECT_EQ(m.count(report::Change::Both), 1);
  m.setDiff(nullptr);
  EXPECT_EQ(m.rowCount(), 0);
}

TEST(BreaksPanel, ListsTheBreaksOfAComparisonOnlyWhileComparing) {
  // The imported breaky log against the crafted session: breaks on both sides, matched by line.
  test::PanelOn<BreaksPanel> shown(1000, 700, test::imported_breaky_trace());
  auto& [ctx, panel] = shown;
  EXPECT_FALSE(panel.changes()->isVisibleTo(&panel));
  auto c = std::make_shared<Comparison>();
  c->session = test::crafted_session();
  c->path = "/somewhere/crafted.kiln";
  c->diff = std::make_shared<const report::SessionDiff>(report::diff_sessions(*test::imported_breaky_trace(), *c->session));
  ctx.setComparison(c);
  EXPECT_TRUE(panel.changes()->isVisibleTo(&panel));
  ASSERT_EQ(panel.changes()->model()->rowCount(), int(c->diff->breaks.size()));
  EXPECT_GT(panel.changes()->model()->rowCount(), 0);
  ctx.setComparison(nullptr);
  EXPECT_FALSE(panel.changes()->isVisibleTo(&panel));
  EXPECT_EQ(panel.changes()->model()->rowCount(), 0);
}
