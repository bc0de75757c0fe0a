#include <QAbstractItemModelTester>
#include <QListWidget>
#include <QSignalSpy>
#include <QTableView>
#include <gtest/gtest.h>

#include "tests/viewers/app/session_fixtures.h"
#include "viewers/common/code_view.h"
#include "viewers/kernels/kernel_detail_models.h"
#include "viewers/kernels/kernel_source_lines.h"
#include "viewers/kernels/kernel_table_model.h"
#include "engine/api/report.h"
#include "viewers/kernels/kernels_panel.h"

using namespace kiln;
using namespace kiln::viewers;

TEST(KernelSourceLines, ReadsNodeNamesFromTheEmittersComments) {
  EXPECT_EQ(nodes_named_on_line("//   q_1 = aten::transpose  (sample_models.py:67:13)"), std::vector<std::string>{"q_1"});
  EXPECT_EQ(nodes_named_on_line("    b19[i] = b14[i];  // q_1"), std::vector<std::string>{"q_1"});
  EXPECT_EQ(nodes_named_on_line("      double acc11 = 0.0;  // sum for layer_norm_sum"),
            std::vector<std::string>{"layer_norm_sum"});
  EXPECT_TRUE(nodes_named_on_line("// k0_row: row kernel fusing 1 graph node").empty());
  EXPECT_TRUE(nodes_named_on_line("  #pragma omp parallel for").empty());
  EXPECT_TRUE(nodes_named_on_line("  x = \"// relu\";").empty());
  EXPECT_EQ(nodes_named_on_line("    # Source Nodes: [linear, y], Original ATen: [aten.addmm]"),
            (std::vector<std::string>{"linear", "y"}));
}

TEST(KernelSourceLines, FindsEveryLineOfANodeInRealGeneratedCode) {
  auto s = test::profiled_block();
  int checked = 0;
  for (const auto& k : s->kernels) {
    if (k.language != "cpp") continue;
    for (const auto& node : k.nodes) {
      auto lines = lines_naming_node(k.source, node);
      ASSERT_FALSE(lines.empty()) << k.name << " " << node;
      // The header lists every node of the kernel; the line found names it.
      int n = 0;
      std::string line;
      for (size_t p = 0, q; n < lines.front(); p = q + 1) {
        q = k.source.find('\n', p);
        line = k.source.substr(p, q - p);
        ++n;
      }
      EXPECT_NE(line.find(node), std::string::npos);
      ++checked;
    }
  }
  EXPECT_GT(checked, 5);
}

TEST(KernelTimes, SharesOfOneRun) {
  auto s = test::crafted_session();
  auto t = report::kernel_times(*s, 1);
  ASSERT_EQ(t.size(), 2u);
  const auto* k0 = report::find_kernel_time(t, s->kernels[0]);
  ASSERT_TRUE(k0);
  EXPECT_EQ(k0->launches, 2);
  EXPECT_EQ(k0->total_ns, 600);
  EXPECT_DOUBLE_EQ(k0->share, 0.6);
  EXPECT_DOUBLE_EQ(report::find_kernel_time(t, s->kernels[1])->share, 0.4);
  EXPECT_DOUBLE_EQ(report::find_kernel_time(report::kernel_times(*s, 2), s->kernels[1])->share, 1.0);
  EXPECT_TRUE(report::kernel_times(*s, 0).empty());
}

namespace {
// The crafted session plus a kernel named like k0's in another region (Kiln numbers kernels per
// region, so names repeat), which ran once for 400 ns in run 1.
std::shared_ptr<const session::Session> with_repeated_kernel_name() {
  auto s = std::make_shared<session::Session>(*test::crafted_session());
  session::Kernel again = s->kernels[0];
  again.compile_id = "[1/0]";
  again.source = "// k0_fused_add_relu of region 1\n";
  s->kernels.push_back(again);
  session::TimelineEvent e = s->timeline[0];
  e.compile_id = "[1/0]";
  e.dur_ns = 400;
  s->timeline.push_back(e);
  return s;
}
}  // namespace

TEST(KernelTimes, RepeatedNamesInOtherRegionsAreTimedApart) {
  auto s = with_repeated_kernel_name();
  auto t = report::kernel_times(*s, 1);
  EXPECT_EQ(report::find_kernel_time(t, s->kernels[0])->total_ns, 600);
  EXPECT_EQ(report::find_kernel_time(t, s->kernels[2])->total_ns, 400);
  EXPECT_EQ(report::find_kernel_time(t, s->kernels[2])->launches, 1);
}

TEST(KernelsPanel, ClickingARepeatedKernelNameShowsTheOneClicked) {
  SelectionContext ctx;
  KernelsPanel panel(&ctx);
  auto s = with_repeated_kernel_name();
  ctx.setSession(s, "");
  panel.table()->selectRow(2);
  EXPECT_EQ(ctx.current().kernel, "k0_fused_add_relu");
  EXPECT_EQ(ctx.current().compile_id, "[1/0]");
  EXPECT_EQ(panel.shownRegion(), "[1/0]");
  EXPECT_EQ(panel.source()->toPlainText().toStdString(), s->kernels[2].source);
  panel.table()->selectRow(0);
  EXPECT_EQ(ctx.current().compile_id, "[0/0]");
  EXPECT_EQ(panel.shownRegion(), "[0/0]");
}

TEST(KernelTableModel, ProfiledBlockKernelsWithTimes) {
  KernelTableModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
  auto s = test::profiled_block();
  int default_run = -1;
  for (const auto& r : s->runs)
    if (r.mode == "default") default_run = r.id;
  model.setSession(s, default_run);
  ASSERT_EQ(model.rowCount(), int(s->kernels.size()));
  ASSERT_GT(model.rowCount(), 3);
  double total = 0;
  for (int r = 0; r < model.rowCount(); ++r) total += model.data(model.index(r, KernelTableModel::Share), Qt::UserRole).toDouble();
  EXPECT_NEAR(total, 1.0, 1e-9);
  EXPECT_EQ(model.data(model.index(0, KernelTableModel::Language)).toString(), "cpp");
  model.setRun(99);  // no such run: no times
  EXPECT_EQ(model.data(model.index(0, KernelTableModel::Launches)).toString(), "–");
}

TEST(KernelDetailModels, AutotuneAndFusionTables) {
  auto s = test::crafted_session();
  AutotuneTableModel at;
  QAbstractItemModelTester t1(&at, QAbstractItemModelTester::FailureReportingMode::Fatal);
  at.setCandidates(s->kernels[0].autotune);
  ASSERT_EQ(at.rowCount(), 2);
  EXPECT_EQ(at.data(at.index(1, AutotuneTableModel::Chosen)).toString(), "chosen");
  FusionTableModel fm;
  QAbstractItemModelTester t2(&fm, QAbstractItemModelTester::FailureReportingMode::Fatal);
  fm.setDecisions(s->fusion, "[0/0]");
  EXPECT_EQ(fm.rowCount(), 2);
  fm.setDecisions(s->fusion, "");
  EXPECT_EQ(fm.rowCount(), 3);
  fm.setDecisions(test::profiled_block()->fusion, "[0/0]");
  EXPECT_GT(fm.rowCount(), 0);
}

TEST(KernelsPanel, KernelSelectedElsewhereShowsItsSource) {
  SelectionContext ctx;
  KernelsPanel panel(&ctx);
  auto s = test::crafted_session();
  ctx.setSession(s, "");
  ctx.selectKernel("k1_row_sum");
  EXPECT_EQ(panel.shownKernel(), "k1_row_sum");
  EXPECT_EQ(panel.source()->toPlainText().toStdString(), s->kernels[1].source);
  EXPECT_EQ(panel.table()->currentIndex().row(), 1);
  ASSERT_EQ(panel.nodes()->count(), 1);
  EXPECT_EQ(panel.nodes()->item(0)->text(), "sum");
}

TEST(KernelsPanel, ClickingANodeSelectsItAndMarksItsLines) {
  SelectionContext ctx;
  KernelsPanel panel(&ctx);
  ctx.setSession(test::crafted_session(), "");
  ctx.selectKernel("k0_fused_add_relu");
  ASSERT_EQ(panel.nodes()->count(), 2);
  QListWidgetItem* relu = panel.nodes()->item(1);
  Q_EMIT panel.nodes()->itemClicked(relu);
  EXPECT_EQ(ctx.current().node, "relu");
  EXPECT_EQ(ctx.current().compile_id, "[0/0]");
  EXPECT_EQ(panel.source()->markedLines(), (std::set<int>{3, 6, 9}));
}

TEST(KernelsPanel, NodeSelectedElsewhereShowsItsKernel) {
  SelectionContext ctx;
  KernelsPanel panel(&ctx);
  ctx.setSession(test::crafted_session(), "");
  ctx.selectNode("[1/0]", "sum");
  EXPECT_EQ(panel.shownKernel(), "k1_row_sum");
  EXPECT_EQ(panel.source()->markedLines(), std::set<int>{2});
  EXPECT_EQ(panel.nodes()->currentRow(), 0);
}

TEST(KernelsPanel, ClickingASourceLineSelectsTheNodeItNames) {
  SelectionContext ctx;
  KernelsPanel panel(&ctx);
  ctx.setSession(test::crafted_session(), "");
  ctx.selectKernel("k0_fused_add_relu");
  Q_EMIT panel.source()->lineClicked(2);  // "//   add = aten::add ..."
  EXPECT_EQ(ctx.current().node, "add");
  Q_EMIT panel.source()->lineClicked(8);  // no comment: nothing changes
  EXPECT_EQ(ctx.current().node, "add");
}

TEST(KernelsPanel, ClickingARowSelectsThatKernel) {
  SelectionContext ctx;
  KernelsPanel panel(&ctx);
  ctx.setSession(test::profiled_block(), "");
  panel.table()->selectRow(2);
  EXPECT_EQ(ctx.current().kernel, test::profiled_block()->kernels[2].name);
  EXPECT_GT(panel.fusion()->model()->rowCount(), 0);
}
