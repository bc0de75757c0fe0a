#include <QLabel>
#include <QListWidget>
#include <QSignalSpy>
#include <QTableView>
#include <gtest/gtest.h>

#include "tests/support/session_builders.h"
#include "tests/viewers/app/session_fixtures.h"
#include "tests/viewers/app/view_fixtures.h"
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
  auto st = report::kernel_stats(*s, 1);
  EXPECT_EQ(st.time_source, "device");
  EXPECT_EQ(st.records, 3);
  EXPECT_EQ(st.total_ns, 1000);
  ASSERT_EQ(st.kernels.size(), 2u);
  auto k0 = report::launcher_time(st, s->kernels[0]);
  EXPECT_DOUBLE_EQ(k0.launches_per_iter, 2.0);  // no iteration events: the run is one iteration
  EXPECT_EQ(k0.total_ns, 600);
  EXPECT_DOUBLE_EQ(k0.share, 0.6);
  EXPECT_DOUBLE_EQ(report::launcher_time(st, s->kernels[1]).share, 0.4);
  EXPECT_DOUBLE_EQ(report::launcher_time(report::kernel_stats(*s, 2), s->kernels[1]).share, 1.0);
  auto eager = report::kernel_stats(*s, 0);
  EXPECT_EQ(eager.records, 0);
  EXPECT_TRUE(eager.kernels.empty());
  EXPECT_DOUBLE_EQ(report::launcher_time(eager, s->kernels[0]).launches_per_iter, 0.0);
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
  auto st = report::kernel_stats(*s, 1);
  EXPECT_EQ(report::launcher_time(st, s->kernels[0]).total_ns, 600);
  EXPECT_EQ(report::launcher_time(st, s->kernels[2]).total_ns, 400);
  EXPECT_DOUBLE_EQ(report::launcher_time(st, s->kernels[2]).launches_per_iter, 1.0);
  KernelTableModel model;
  model.setSession(s, 1);
  EXPECT_EQ(model.rowCount(), 3);  // every record is one of the session's kernels'
  EXPECT_EQ(model.data(model.index(2, KernelTableModel::TimeMs)).toString(), "0.0004");
}

namespace {
// The crafted session's run 1 traced over two iterations, as a GPU profile records it: besides
// Kiln's device records, each iteration has k0's host launch span and its launch API call (both
// naming k0) and a cuBLAS kernel of an extern call, aten::linear, 1 µs on the device.
const char* const kGemv =
    "void gemv2T_kernel_val<int, int, float, float, float, float, 128, 16, 4, 4, false, false, "
    "cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<float const>, float>>(float, float)";

std::shared_ptr<const session::Session> with_library_kernel() {
  auto s = std::make_shared<session::Session>(*test::crafted_session());
  for (int it = 0; it < 2; ++it) {
    const int64_t t = it * 10000;
    s->timeline.push_back(test::timeline_event(1, "host:1", "iteration", "iteration", t, 9000));
    s->timeline.push_back(test::kernel_event(1, "k0_fused_add_relu", "", t + 100, 5000, "host:1"));
    s->timeline.push_back(
        test::timeline_event(1, "cuda api", "cuda_runtime", "cudaLaunchKernel", t + 200, 2000, "k0_fused_add_relu"));
    s->timeline.push_back(test::timeline_event(1, "cuda:0/stream 7", "kernel", kGemv, t + 6000, 1000, "aten::linear"));
  }
  return s;
}

double share_sum(const KernelTableModel& m) {
  double total = 0;
  for (int r = 0; r < m.rowCount(); ++r) total += m.data(m.index(r, KernelTableModel::Share), Qt::UserRole).toDouble();
  return total;
}
}  // namespace

TEST(KernelTableModel, DeviceRecordsOnlyWithLibraryKernelsAfterTheSessions) {
  auto s = with_library_kernel();
  test::CheckedModel<KernelTableModel> model(s, 1);
  EXPECT_EQ(model.stats().iterations, 2);
  EXPECT_EQ(model.stats().records, 5);  // 3 of Kiln's kernels, 2 of cuBLAS: no host span, no API call
  EXPECT_EQ(model.stats().total_ns, 3000);
  EXPECT_EQ(model.headerData(KernelTableModel::Launches, Qt::Horizontal).toString(), "Launches/iter");
  EXPECT_EQ(model.headerData(KernelTableModel::TimeMs, Qt::Horizontal).toString(), "GPU ms/iter");
  auto cell = [&](int row, int col) { return model.data(model.index(row, col)).toString(); };
  // k0: 2 device records of 300 ns in 2 iterations, not its host spans (5 µs) or launch calls.
  EXPECT_EQ(cell(0, KernelTableModel::Launches), "1.0");
  EXPECT_EQ(cell(0, KernelTableModel::TimeMs), "0.0003");
  EXPECT_EQ(cell(0, KernelTableModel::Share), "20.0 %");
  EXPECT_EQ(cell(1, KernelTableModel::Launches), "0.5");
  EXPECT_EQ(cell(1, KernelTableModel::TimeMs), "0.0002");
  // The cuBLAS kernel: a row after the session's kernels, with what launched it.
  ASSERT_EQ(model.rowCount(), 3);
  EXPECT_EQ(model.kernel(2), nullptr);
  ASSERT_NE(model.deviceKernel(2), nullptr);
  EXPECT_EQ(model.deviceKernel(0), nullptr);
  EXPECT_EQ(model.deviceKernel(2)->name, kGemv);
  EXPECT_EQ(cell(2, KernelTableModel::Name), "gemv2T_kernel_val<…>");
  const auto tip = model.data(model.index(2, KernelTableModel::Name), Qt::ToolTipRole).toString().toStdString();
  EXPECT_EQ(tip, std::string(kGemv) + "\nlaunched by aten::linear (extern)");
  EXPECT_EQ(cell(2, KernelTableModel::Language), "device");
  EXPECT_EQ(cell(2, KernelTableModel::Launch), "launched by aten::linear");
  EXPECT_EQ(cell(2, KernelTableModel::Launches), "1.0");
  EXPECT_EQ(cell(2, KernelTableModel::TimeMs), "0.0010");
  EXPECT_EQ(cell(2, KernelTableModel::Registers), "–");
  EXPECT_NEAR(model.data(model.index(2, KernelTableModel::Share), Qt::UserRole).toDouble(), 2.0 / 3, 1e-12);
  EXPECT_NEAR(share_sum(model), 1.0, 1e-12);
  EXPECT_EQ(model.rowOf("aten::linear"), -1);
  EXPECT_EQ(model.rowOf("k1_row_sum"), 1);
  // Another run: the library rows go, the session's stay.
  model.setRun(2);
  EXPECT_EQ(model.rowCount(), 2);
  EXPECT_EQ(cell(0, KernelTableModel::Launches), "–");
  EXPECT_EQ(cell(1, KernelTableModel::Share), "100.0 %");
  model.setRun(1);
  EXPECT_EQ(model.rowCount(), 3);
}

TEST(KernelsPanel, ALibraryKernelsRowShowsWhatLaunchedItAndKeepsTheSelection) {
  SelectionContext ctx;
  KernelsPanel panel(&ctx);
  auto s = with_library_kernel();
  ctx.setSession(s, "");
  ctx.setRun(1);
  auto* label = panel.findChild<QLabel*>("kernelTimesFrom");
  ASSERT_TRUE(label);
  EXPECT_TRUE(label->text().contains("GPU time per iteration from device records of the selected run, default"))
      << label->text().toStdString();
  ASSERT_EQ(panel.table()->model()->rowCount(), 3);
  ctx.selectKernel("k0_fused_add_relu", "[0/0]");
  panel.table()->selectRow(2);
  EXPECT_EQ(ctx.current().kernel, "k0_fused_add_relu");  // not a session kernel: the selection stays
  EXPECT_EQ(panel.shownKernel(), "");
  const QString note = panel.source()->toPlainText();
  EXPECT_TRUE(note.contains("launched by aten::linear (extern): no source")) << note.toStdString();
  EXPECT_EQ(panel.nodes()->count(), 0);
  // Back to the kernel still selected.
  panel.table()->selectRow(0);
  EXPECT_EQ(panel.shownKernel(), "k0_fused_add_relu");
  EXPECT_EQ(panel.source()->toPlainText().toStdString(), s->kernels[0].source);
  // A run without the library kernel removes its row and shows the selected kernel again.
  panel.table()->selectRow(2);
  ctx.setRun(2);
  EXPECT_EQ(panel.table()->model()->rowCount(), 2);
  EXPECT_EQ(panel.shownKernel(), "k0_fused_add_relu");
  EXPECT_EQ(panel.table()->currentIndex().row(), 0);
  EXPECT_EQ(ctx.current().kernel, "k0_fused_add_relu");
}

TEST(KernelsPanel, ARunWithoutKernelTimeShowsTheFirstRunThatHasIt) {
  SelectionContext ctx;
  KernelsPanel panel(&ctx);
  ctx.setSession(test::crafted_session(), "");
  ASSERT_EQ(ctx.current().run, 0);  // eager: no device records
  auto* label = panel.findChild<QLabel*>("kernelTimesFrom");
  ASSERT_TRUE(label);
  EXPECT_TRUE(label->text().startsWith("The selected run, eager (eager), recorded no kernel time. Launches and GPU "
                                       "time per iteration from device records of default (kiln)"))
      << label->text().toStdString();
  EXPECT_EQ(panel.table()->model()->data(panel.table()->model()->index(0, KernelTableModel::Share)).toString(),
            "60.0 %");
}

TEST(KernelsPanel, ARunOfLibraryKernelsOnlyShowsTheFirstRunOfTheGeneratedOnes) {
  // Eager ran a cuBLAS kernel and none of Kiln's: the generated kernels' times come from default.
  auto s = std::make_shared<session::Session>(*test::crafted_session());
  session::TimelineEvent gemm = s->timeline[0];
  gemm.run = 0;
  gemm.name = "sgemm_128x64";
  gemm.kernel = "aten::addmm";
  gemm.compile_id.clear();
  s->timeline.push_back(gemm);
  SelectionContext ctx;
  KernelsPanel panel(&ctx);
  ctx.setSession(s, "");
  ASSERT_EQ(ctx.current().run, 0);
  auto* label = panel.findChild<QLabel*>("kernelTimesFrom");
  ASSERT_TRUE(label);
  EXPECT_TRUE(label->text().startsWith("The selected run, eager (eager), ran none of the generated kernels. Launches "
                                       "and GPU time per iteration from device records of default (kiln)"))
      << label->text().toStdString();
  EXPECT_EQ(panel.table()->model()->rowCount(), 2);
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
  auto s = test::profiled_block();
  int default_run = -1;
  for (const auto& r : s->runs)
    if (r.mode == "default") default_run = r.id;
  test::CheckedModel<KernelTableModel> model(s, default_run);
  // On the CPU Kiln's kernel spans are the kernel time, and its extern calls get rows of their own.
  ASSERT_GT(model.stats().records, 0);
  EXPECT_EQ(model.stats().time_source, "host");
  EXPECT_EQ(model.headerData(KernelTableModel::TimeMs, Qt::Horizontal).toString(), "CPU ms/iter");
  ASSERT_GE(model.rowCount(), int(s->kernels.size()));
  ASSERT_GT(int(s->kernels.size()), 3);
  EXPECT_NEAR(share_sum(model), 1.0, 1e-9);
  EXPECT_EQ(model.data(model.index(0, KernelTableModel::Language)).toString(), "cpp");
  EXPECT_EQ(model.data(model.index(0, KernelTableModel::Launches)).toString(), "1.0");  // once per iteration
  for (int r = int(s->kernels.size()); r < model.rowCount(); ++r) {
    EXPECT_EQ(model.kernel(r), nullptr);
    ASSERT_NE(model.deviceKernel(r), nullptr);
    EXPECT_EQ(model.deviceKernel(r)->launcher, "extern");
  }
  model.setRun(99);  // no such run: no times
  EXPECT_EQ(model.rowCount(), int(s->kernels.size()));
  EXPECT_EQ(model.data(model.index(0, KernelTableModel::Launches)).toString(), "–");
}

TEST(KernelDetailModels, AutotuneAndFusionTables) {
  auto s = test::crafted_session();
  test::CheckedModel<AutotuneTableModel> at;
  at.setCandidates(s->kernels[0].autotune);
  ASSERT_EQ(at.rowCount(), 2);
  EXPECT_EQ(at.data(at.index(1, AutotuneTableModel::Chosen)).toString(), "chosen");
  test::CheckedModel<FusionTableModel> fm;
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
