#include <QAbstractItemView>
#include <QDockWidget>
#include <QListWidget>
#include <QSignalSpy>
#include <QTableView>
#include <QTest>
#include <QTreeView>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>

#include "engine/session/store.h"
#include "tests/support/paths.h"
#include "tests/viewers/app/session_fixtures.h"
#include "viewers/main/main_window.h"
#include "viewers/main/open_kind.h"
#include "viewers/main/report_export.h"
#include "viewers/main/session_job.h"

using namespace kiln;
using namespace kiln::viewers;

namespace {

int rows(MainWindow& w, const char* panel, const char* view) {
  auto* v = w.panel(panel)->findChild<QAbstractItemView*>(view);
  return v && v->model() ? v->model()->rowCount() : -1;
}

// Opens `path` and waits until the window reports the outcome; returns the error ("" when opened).
QString open_and_wait(MainWindow& w, const QString& path) {
  QSignalSpy opened(&w, &MainWindow::sessionOpened);
  QSignalSpy failed(&w, &MainWindow::errorShown);
  w.open(path);
  for (int i = 0; i < 600 && opened.isEmpty() && failed.isEmpty(); ++i) QTest::qWait(50);
  if (!failed.isEmpty()) return failed.first().first().toString();
  return opened.isEmpty() ? QString("timed out") : QString();
}

// Starts a CPU profile of the example `model` (eager and default) into <temp>/<out_name>.
ProfileRequest start_cpu_profile(SessionJob& job, const std::string& model, const std::string& input, int iters,
                                 const std::string& out_name) {
  ProfileRequest r;
  r.model_path = test::example(model);
  r.inputs = {input};
  r.options.modes = {"eager", "default"};
  r.options.iters = iters;
  r.options.device = "cpu";
  r.out_path = test::temp_dir() + "/" + out_name;
  job.profile(r);
  return r;
}

void wait_until_idle(const SessionJob& job) {
  for (int i = 0; i < 600 && job.busy(); ++i) QTest::qWait(50);
}

}  // namespace

TEST(OpenKind, ByExtensionAndFolders) {
  EXPECT_EQ(open_kind("a/model.pt"), OpenKind::Model);
  EXPECT_EQ(open_kind("MODEL.PTH"), OpenKind::Model);
  EXPECT_EQ(open_kind("exported/resnet.pt2"), OpenKind::Model);
  EXPECT_EQ(open_kind("run.kiln"), OpenKind::Session);
  EXPECT_EQ(open_kind("dedicated_log_torch_trace_rank_0.log"), OpenKind::Import);
  EXPECT_EQ(open_kind("trace.json.gz"), OpenKind::Import);
  EXPECT_EQ(open_kind(test::data("traces")), OpenKind::Import);
}

TEST(MainWindow, OpeningASessionFilePopulatesEveryPanel) {
  MainWindow w;
  w.setErrorBoxes(false);
  ASSERT_EQ(open_and_wait(w, QString::fromStdString(test::profiled_block_path())), "");
  const auto* s = w.selection()->session();
  ASSERT_TRUE(s);
  EXPECT_EQ(w.windowTitle(), "Kiln — block.kiln");
  EXPECT_EQ(rows(w, "breaks", "breaksTable"), 0);
  EXPECT_EQ(rows(w, "guards", "guardTree"), 1);
  // The session's kernels, then the run's extern calls (library kernels on a GPU) in rows of their own.
  EXPECT_GT(rows(w, "kernels", "kernelTable"), int(s->kernels.size()));
  EXPECT_GT(int(s->kernels.size()), 3);
  EXPECT_EQ(rows(w, "comparison", "runTable"), 2);
  EXPECT_GT(w.panel("comparison")->findChild<QListWidget*>("observations")->count(), 0);
  EXPECT_TRUE(MainWindow::recentFiles().contains(
      QFileInfo(QString::fromStdString(test::profiled_block_path())).absoluteFilePath()));
}

TEST(MainWindow, ImportingATorchTraceLogPopulatesEveryPanel) {
  MainWindow w;
  w.setErrorBoxes(false);
  ASSERT_EQ(open_and_wait(w, QString::fromStdString(test::data("traces/breaky_dynamic.log"))), "");
  EXPECT_EQ(w.windowTitle(), "Kiln — breaky_dynamic.log");
  EXPECT_EQ(rows(w, "breaks", "breaksTable"), 3);
  EXPECT_EQ(rows(w, "guards", "guardTree"), 4);
  EXPECT_EQ(rows(w, "guards", "recompileTable"), 4);
  EXPECT_EQ(rows(w, "kernels", "kernelTable"), 16);
  EXPECT_EQ(rows(w, "comparison", "runTable"), 0);
}

TEST(MainWindow, ACorruptFileShowsAnErrorAndKeepsTheSessionShown) {
  MainWindow w;
  w.setErrorBoxes(false);
  ASSERT_EQ(open_and_wait(w, QString::fromStdString(test::profiled_block_path())), "");
  auto before = w.selection()->current().session;

  std::string bad = test::temp_dir() + "/broken.kiln";
  std::ofstream(bad) << "this is not a session";
  QString error = open_and_wait(w, QString::fromStdString(bad));
  EXPECT_TRUE(error.contains("broken.kiln")) << error.toStdString();
  EXPECT_EQ(w.selection()->current().session, before);
  EXPECT_EQ(w.windowTitle(), "Kiln — block.kiln");

  std::string junk = test::temp_dir() + "/junk.log";
  std::ofstream(junk) << "\x01\x02 not a trace at all\n";
  error = open_and_wait(w, QString::fromStdString(junk));
  EXPECT_TRUE(error.contains("junk.log")) << error.toStdString();
  EXPECT_EQ(w.selection()->current().session, before);
  EXPECT_EQ(rows(w, "comparison", "runTable"), 2);
}

TEST(MainWindow, ExportsReportsAtomicallyAndReportsFailures) {
  MainWindow w;
  w.setErrorBoxes(false);
  ASSERT_EQ(open_and_wait(w, QString::fromStdString(test::profiled_block_path())), "");
  std::string dir = test::temp_dir();
  w.exportReport(ReportFormat::Markdown, QString::fromStdString(dir + "/r.md"));
  EXPECT_EQ(test::read_file(dir + "/r.md"), render_report(*w.selection()->session(), ReportFormat::Markdown));
  QSignalSpy failed(&w, &MainWindow::errorShown);
  w.exportReport(ReportFormat::Html, QString::fromStdString(dir + "/no/such/folder/r.html"));
  ASSERT_EQ(failed.count(), 1);
  EXPECT_TRUE(failed.first().first().toString().contains("no/such/folder/r.html"));
  EXPECT_THROW(parse_report_format("pdf"), Error);
}

TEST(SessionJob, ProfilesAModelAndDropsStaleResults) {
  SessionJob job;
  QSignalSpy done(&job, &SessionJob::finished);
  QSignalSpy failed(&job, &SessionJob::failed);
  start_cpu_profile(job, "breaky.pt", "4x64", 3, "breaky.kiln");
  // A second job right away replaces the first: only its result arrives.
  const quint64 second = job.openSession(QString::fromStdString(test::profiled_block_path()));
  wait_until_idle(job);
  ASSERT_EQ(done.count(), 1);
  EXPECT_EQ(done.first().at(0).toULongLong(), second);
  EXPECT_EQ(failed.count(), 0);
}

TEST(SessionJob, CancelDiscardsThePartialSession) {
  SessionJob job;
  QSignalSpy cancelled(&job, &SessionJob::cancelled);
  QSignalSpy done(&job, &SessionJob::finished);
  const ProfileRequest r = start_cpu_profile(job, "block.pt", "2x16x64", 200, "cancelled.kiln");
  job.cancel();
  wait_until_idle(job);
  EXPECT_EQ(cancelled.count(), 1);
  EXPECT_EQ(done.count(), 0);
  EXPECT_FALSE(std::filesystem::exists(r.out_path));
}

TEST(SessionJob, ABadModelFailsWithTheEnginesMessage) {
  SessionJob job;
  QSignalSpy failed(&job, &SessionJob::failed);
  ProfileRequest r;
  r.model_path = test::data("traces/breaky_dynamic.log");  // not a TorchScript archive
  r.inputs = {"4x64"};
  r.out_path = test::temp_dir() + "/bad.kiln";
  job.profile(r);
  wait_until_idle(job);
  ASSERT_EQ(failed.count(), 1);
  EXPECT_TRUE(failed.first().at(2).toString().contains("breaky_dynamic.log"));
  EXPECT_FALSE(std::filesystem::exists(r.out_path));
}
