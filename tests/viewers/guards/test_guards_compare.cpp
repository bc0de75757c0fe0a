// The guards panel while two sessions are compared: B's entries as the second side.
#include <QComboBox>
#include <QTableView>
#include <gtest/gtest.h>

#include "tests/viewers/app/session_fixtures.h"
#include "tests/viewers/app/view_fixtures.h"
#include "viewers/guards/guards_panel.h"

using namespace kiln;
using namespace kiln::viewers;

TEST(GuardsPanel, ComparingDiffsAnEntryWithBsEntryOfTheSameCompileId) {
  test::PanelOn<GuardsPanel> shown(1000, 700, test::profiled_block());
  auto& [ctx, panel] = shown;
  auto* after = panel.findChild<QComboBox*>("diffAfter");
  ASSERT_TRUE(after);
  EXPECT_EQ(after->findText("B [0/0]"), -1);
  EXPECT_TRUE(panel.comparisonText().isEmpty());
  ctx.setComparison(test::block_comparison());
  ASSERT_NE(after->findText("B [0/0]"), -1);
  ctx.setRegion("[0/0]");
  EXPECT_EQ(after->currentText(), "B [0/0]");
  // Batch 2 against batch 4: the size guard of dimension 0 differs, and nothing else.
  const auto* m = panel.diff()->model();
  ASSERT_EQ(m->rowCount(), 1);
  EXPECT_EQ(m->data(m->index(0, 1)).toString(), "x.size(0) == 2");
  EXPECT_EQ(m->data(m->index(0, 2)).toString(), "x.size(0) == 4");
  EXPECT_TRUE(panel.comparisonText().contains("[0/0] guards +1 / −1")) << panel.comparisonText().toStdString();
  ctx.setComparison(nullptr);
  EXPECT_EQ(after->findText("B [0/0]"), -1);
  EXPECT_TRUE(panel.comparisonText().isEmpty());
}
