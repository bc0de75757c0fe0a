#include "viewers/main/main_window.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDateTime>
#include <QDir>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QStandardPaths>
#include <QStatusBar>

#include "viewers/breaks/breaks_panel.h"
#include "viewers/comparison/comparison_panel.h"
#include "viewers/environment/environment_panel.h"
#include "viewers/guards/guards_panel.h"
#include "viewers/kernels/kernels_panel.h"
#include "viewers/main/open_kind.h"
#include "viewers/selection/display_bounds.h"
#include "viewers/main/profile_dialog.h"

#include "viewers/graph/graph_panel.h"
#include "viewers/timeline/timeline_panel.h"

namespace kiln::viewers {

namespace {

constexpr int kMaxRecent = 10;

QString session_cache_path(const QString& model) {
  QString dir = QStandardPaths::writableLocation(QStandardPaths::CacheLocation);
  if (dir.isEmpty()) dir = QDir::tempPath() + "/kiln";
  return dir + "/sessions/" + QFileInfo(model).completeBaseName() + "-" +
         QDateTime::currentDateTime().toString("yyyyMMdd-hhmmss-zzz") + ".kiln";
}

}  // namespace

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent), ctx_(new SelectionContext(this)), job_(new SessionJob(this)) {
  setObjectName("KilnMainWindow");
  setAcceptDrops(true);
  setDockNestingEnabled(true);
  setDockOptions(QMainWindow::AnimatedDocks | QMainWindow::AllowTabbedDocks | QMainWindow::AllowNestedDocks);

  addPanel("graph", "Graph", new GraphPanel(ctx_), Qt::LeftDockWidgetArea);
  auto* breaks = addPanel("breaks", "Graph breaks", new BreaksPanel(ctx_), Qt::RightDockWidgetArea);
  auto* guards = addPanel("guards", "Guards and recompiles", new GuardsPanel(ctx_), Qt::RightDockWidgetArea);
  auto* kernels = addPanel("kernels", "Kernels", new KernelsPanel(ctx_), Qt::RightDockWidgetArea);
  auto* comparison = addPanel("comparison", "Comparison", new ComparisonPanel(ctx_), Qt::RightDockWidgetArea);
  auto* environment = addPanel("environment", "Environment", new EnvironmentPanel(ctx_), Qt::RightDockWidgetArea);
  addPanel("timeline", "Timeline", new TimelinePanel(ctx_), Qt::BottomDockWidgetArea);
  tabifyDockWidget(breaks, guards);
  tabifyDockWidget(guards, kernels);
  tabifyDockWidget(kernels, comparison);
  tabifyDockWidget(comparison, environment);
  breaks->raise();
  resizeDocks({docks_["graph"], breaks}, {520, 1000}, Qt::Horizontal);
  resizeDocks({breaks, docks_["timeline"]}, {640, 220}, Qt::Vertical);

  progress_ = new QProgressBar(this);
  progress_->setMaximumWidth(220);
  progress_->hide();
  cancel_ = new QPushButton("Cancel", this);
  cancel_->hide();
  sessionLabel_ = new QLabel(this);
  statusBar()->addWidget(sessionLabel_, 1);
  statusBar()->addPermanentWidget(progress_);
  statusBar()->addPermanentWidget(cancel_);
  connect(cancel_, &QPushButton::clicked, this, &MainWindow::cancelJob);

  connect(job_, &SessionJob::progress, this, [this](quint64, const QString& what, int done, int total) {
    progress_->setRange(0, std::max(total, 1));
    progress_->setValue(done);
    statusBar()->showMessage(QString("Profiling %1: %2 (%3/%4)").arg(QFileInfo(pendingSource_).fileName(), what).arg(done).arg(total));
  });
  connect(job_, &SessionJob::finished, this, &MainWindow::onFinished);
  connect(job_, &SessionJob::failed, this, &MainWindow::onFailed);
  connect(job_, &SessionJob::compared, this, &MainWindow::onCompared);
  connect(job_, &SessionJob::cancelled, this, [this](quint64, const QString& source) {
    jobStopped();
    statusBar()->showMessage("Cancelled " + QFileInfo(source).fileName() + "; the partial session was discarded", 8000);
  });

  buildMenus();
  updateTitle();
  sessionLabel_->setText(QString("Kiln %1 on LibTorch %2. Open a model (.pt, .pt2), a session (.kiln), a TORCH_TRACE log "
                                 "or a profiler trace; or drop one here.")
                             .arg(QString::fromStdString(api::version_description()),
                                  QString::fromStdString(api::libtorch_version())));
  resize(1500, 950);
}

MainWindow::~MainWindow() { job_->cancel(); }

QDockWidget* MainWindow::addPanel(const QString& name, const QString& title, QWidget* panel, Qt::DockWidgetArea area) {
  auto* dock = new QDockWidget(title, this);
  dock->setObjectName(name + "Dock");
  panel->setObjectName(name + "Panel");
  dock->setWidget(panel);
  addDockWidget(area, dock);
  docks_[name] = dock;
  return dock;
}

QWidget* MainWindow::panel(const QString& name) const {
  auto* d = dock(name);
  return d ? d->widget() : nullptr;
}

void MainWindow::setSourceDirs(const QStringList& dirs) {
  std::vector<std::string> d;
  for (const auto& s : dirs) d.push_back(QFileInfo(s).absoluteFilePath().toStdString());
  if (auto* b = qobject_cast<BreaksPanel*>(panel("breaks"))) b->setSourceDirs(d);
}

void MainWindow::buildMenus() {
  auto* file = menuBar()->addMenu("&File");
  auto* open = file->addAction("&Open...");
  open->setShortcut(QKeySequence::Open);
  connect(open, &QAction::triggered, this, [this] {
    QString path = QFileDialog::getOpenFileName(
        this, "Open", QString(),
        "Everything Kiln opens (*.pt *.pth *.pt2 *.kiln *.log *.json *.gz);;TorchScript models (*.pt *.pth);;Exported programs (*.pt2);;"
        "Kiln sessions (*.kiln);;TORCH_TRACE logs (*.log);;Profiler traces (*.json *.json.gz);;All files (*)");
    if (!path.isEmpty()) this->open(path);
  });
  auto* importDir = file->addAction("Import TORCH_TRACE &folder...");
  connect(importDir, &QAction::triggered, this, [this] {
    QString dir = QFileDialog::getExistingDirectory(this, "Import a TORCH_TRACE folder");
    if (!dir.isEmpty()) this->open(dir);
  });
  recentMenu_ = file->addMenu("Open &recent");
  refreshRecentMenu();
  file->addSeparator();
  auto* save = file->addAction("&Save session as...");
  save->setShortcut(QKeySequence::SaveAs);
  connect(save, &QAction::triggered, this, [this] {
    if (!ctx_->session()) return;
    QString path = QFileDialog::getSaveFileName(this, "Save session", QFileInfo(source_).completeBaseName() + ".kiln",
                                                "Kiln sessions (*.kiln)");
    if (path.isEmpty()) return;
    try {
      session::save_session(path.toStdString(), *ctx_->session());
      statusBar()->showMessage("Session saved to " + path, 6000);
    } catch (const std::exception& e) {
      showError("Cannot save the session", QString::fromStdString(e.what()));
    }
  });
  sessionActions_ << save;
  compare_ = file->addAction("&Compare with...");
  compare_->setToolTip("Compare the shown session with another run: a session, a TORCH_TRACE log or a profiler trace");
  connect(compare_, &QAction::triggered, this, [this] {
    QString path = QFileDialog::getOpenFileName(
        this, "Compare with", QFileInfo(source_).absolutePath(),
        "Sessions and traces (*.kiln *.log *.json *.gz);;Kiln sessions (*.kiln);;TORCH_TRACE logs (*.log);;"
        "Profiler traces (*.json *.json.gz);;All files (*)");
    if (!path.isEmpty()) compareWith(path);
  });
  sessionActions_ << compare_;
  endCompare_ = file->addAction("&End comparison");
  endCompare_->setEnabled(false);
  connect(endCompare_, &QAction::triggered, this, &MainWindow::endComparison);
  auto* exportMenu = file->addMenu("&Export report");
  struct Fmt {
    const char* label;
    ReportFormat format;
    const char* ext;
    const char* filter;
  };
  for (const Fmt& f : {Fmt{"&HTML...", ReportFormat::Html, ".html", "HTML (*.html)"},
                       Fmt{"&Markdown...", ReportFormat::Markdown, ".md", "Markdown (*.md)"},
                       Fmt{"&JSON...", ReportFormat::Json, ".json", "JSON (*.json)"}}) {
    auto* a = exportMenu->addAction(f.label);
    connect(a, &QAction::triggered, this, [this, f] {
      if (!ctx_->session()) return;
      QString path = QFileDialog::getSaveFileName(this, "Export report",
                                                  QFileInfo(source_).completeBaseName() + "-report" + f.ext, f.filter);
      if (!path.isEmpty()) exportReport(f.format, path);
    });
    sessionActions_ << a;
  }
  file->addSeparator();
  auto* quit = file->addAction("&Quit");
  quit->setShortcut(QKeySequence::Quit);
  connect(quit, &QAction::triggered, this, &QWidget::close);
  for (auto* a : sessionActions_) a->setEnabled(false);

  viewMenu_ = menuBar()->addMenu("&View");
  for (const char* name : {"graph", "breaks", "guards", "kernels", "timeline", "comparison", "environment"})
    viewMenu_->addAction(docks_[name]->toggleViewAction());

  auto* help = menuBar()->addMenu("&Help");
  connect(help->addAction("&About Kiln"), &QAction::triggered, this, [this] {
    QMessageBox::about(this, "About Kiln",
                       QString("Kiln %1 on LibTorch %2\nProfiling and debugging compiled PyTorch models.")
                           .arg(QString::fromStdString(api::version_description()), QString::fromStdString(api::libtorch_version())));
  });
}

void MainWindow::open(const QString& path) {
  switch (open_kind(path.toStdString())) {
    case OpenKind::Model:
      openModel(path);
      return;
    case OpenKind::Session:
      pendingSource_ = path;
      job_->openSession(path);
      jobStarted("Opening " + path);
      return;
    case OpenKind::Import:
      pendingSource_ = path;
      job_->importTrace(path);
      jobStarted("Importing " + path);
      return;
  }
}

void MainWindow::openModel(const QString& path, const QStringList& inputs, const QStringList& modes) {
  ProfileRequest request;
  if (inputs.isEmpty()) {
    QStringList args;
    try {
      QApplication::setOverrideCursor(Qt::WaitCursor);
      auto m = model::load_model(path.toStdString());
      QApplication::restoreOverrideCursor();
      for (const auto& a : m.forward_arg_names()) args << QString::fromStdString(a);
    } catch (const std::exception& e) {
      QApplication::restoreOverrideCursor();
      showError("Cannot open " + QFileInfo(path).fileName(), QString::fromStdString(e.what()));
      return;
    }
    ProfileDialog dialog(path, args, this);
    if (dialog.exec() != QDialog::Accepted) return;
    request = dialog.request();
  } else {
    for (const auto& i : inputs) request.inputs.push_back(i.trimmed().toStdString());
    request.options.modes.clear();
    for (const auto& m : modes.isEmpty() ? QStringList{"eager", "default"} : modes)
      request.options.modes.push_back(m.trimmed().toStdString());
  }
  request.model_path = QFileInfo(path).absoluteFilePath().toStdString();
  request.out_path = session_cache_path(path).toStdString();
  pendingSource_ = path;
  job_->profile(request);
  jobStarted("Profiling " + path);
}

void MainWindow::compareWith(const QString& path) {
  if (!shown_) {
    showError("Nothing to compare", "Open a session, a model or a trace first, then compare it with " + path + ".");
    return;
  }
  pendingSource_ = path;
  job_->compare(path, shown_, QFileInfo(source_).fileName());
  jobStarted("Comparing with " + path);
}

void MainWindow::endComparison() {
  ctx_->setComparison(nullptr);
  endCompare_->setEnabled(false);
  statusBar()->showMessage("Comparison ended", 4000);
}

void MainWindow::onCompared(quint64, std::shared_ptr<const session::Session> other,
                            std::shared_ptr<const report::SessionDiff> diff, const QString& source) {
  auto c = std::make_shared<Comparison>();
  c->session = bounded_for_display(std::move(other));
  c->path = source.toStdString();
  c->diff = std::move(diff);
  ctx_->setComparison(std::move(c));
  endCompare_->setEnabled(true);
  jobStopped();
  statusBar()->showMessage("Comparing " + QFileInfo(source_).fileName() + " (A) with " + QFileInfo(source).fileName() +
                               " (B)",
                           10000);
  docks_["comparison"]->raise();
  Q_EMIT comparisonOpened(source);
}

void MainWindow::cancelJob() {
  if (!job_->busy()) return;
  job_->cancel();
  statusBar()->showMessage("Cancelling...");
}

void MainWindow::exportReport(ReportFormat format, const QString& path) {
  if (!ctx_->session()) return;
  try {
    export_report(*ctx_->session(), format, path.toStdString());
    statusBar()->showMessage("Report written to " + path, 8000);
  } catch (const std::exception& e) {
    showError("Cannot export the report", QString::fromStdString(e.what()));
  }
}

void MainWindow::jobStarted(const QString& what) {
  progress_->setRange(0, 0);  // busy until the first progress report
  progress_->show();
  cancel_->setVisible(open_kind(pendingSource_.toStdString()) == OpenKind::Model);
  statusBar()->showMessage(what + "...");
}

void MainWindow::jobStopped() {
  progress_->hide();
  cancel_->hide();
  statusBar()->clearMessage();
  Q_EMIT jobEnded();
}

void MainWindow::onFinished(quint64, std::shared_ptr<const session::Session> s, const QString& source,
                            const QString& session_path, const QString& note) {
  source_ = source;
  shown_ = s;
  if (endCompare_) endCompare_->setEnabled(false);  // a new session ends the comparison
  ctx_->setSession(bounded_for_display(std::move(s)), (session_path.isEmpty() ? source : session_path).toStdString());
  addRecent(QFileInfo(source).absoluteFilePath());
  updateTitle();
  for (auto* a : sessionActions_) a->setEnabled(true);
  const auto* ss = ctx_->session();
  sessionLabel_->setText(QString("%1 — %2: %3 region(s), %4 graph break(s), %5 kernel(s), %6 run(s)%7")
                             .arg(QFileInfo(source).fileName(), QString::fromStdString(ss->origin))
                             .arg(ss->regions.size())
                             .arg(ss->breaks.size())
                             .arg(ss->kernels.size())
                             .arg(ss->runs.size())
                             .arg(note.isEmpty() ? QString() : "; " + note));
  raiseDefaultPanel();
  jobStopped();
  Q_EMIT sessionOpened(source);
}

void MainWindow::onFailed(quint64, const QString& source, const QString& message) {
  jobStopped();
  showError("Cannot open " + QFileInfo(source).fileName(), message);
}

void MainWindow::showError(const QString& title, const QString& message) {
  statusBar()->showMessage(title, 8000);
  Q_EMIT errorShown(message);
  if (!errorBoxes_) return;
  auto* box = new QMessageBox(QMessageBox::Warning, "Kiln", title, QMessageBox::Ok, this);
  box->setInformativeText(message);
  box->setAttribute(Qt::WA_DeleteOnClose);
  box->open();
}

void MainWindow::raiseDefaultPanel() {
  const auto* s = ctx_->session();
  if (!s) return;
  int ok = 0;
  for (const auto& r : s->runs) ok += r.status == "ok";
  if (!s->breaks.empty())
    docks_["breaks"]->raise();
  else if (ok > 1)
    docks_["comparison"]->raise();
  else if (!s->kernels.empty())
    docks_["kernels"]->raise();
  else
    docks_["guards"]->raise();
}

void MainWindow::updateTitle() {
  setWindowTitle(source_.isEmpty() ? QString("Kiln") : "Kiln — " + QFileInfo(source_).fileName());
  setWindowFilePath(source_);
}

QStringList MainWindow::recentFiles() { return QSettings().value("recentFiles").toStringList(); }

void MainWindow::addRecent(const QString& path) {
  QSettings settings;
  QStringList list = settings.value("recentFiles").toStringList();
  list.removeAll(path);
  list.prepend(path);
  while (list.size() > kMaxRecent) list.removeLast();
  settings.setValue("recentFiles", list);
  refreshRecentMenu();
}

void MainWindow::refreshRecentMenu() {
  recentMenu_->clear();
  const QStringList list = recentFiles();
  for (const auto& p : list) {
    auto* a = recentMenu_->addAction(QFileInfo(p).fileName() + "   " + QFileInfo(p).absolutePath());
    connect(a, &QAction::triggered, this, [this, p] { open(p); });
  }
  recentMenu_->setEnabled(!list.isEmpty());
}

void MainWindow::dragEnterEvent(QDragEnterEvent* e) {
  if (e->mimeData()->hasUrls()) e->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* e) {
  const auto urls = e->mimeData()->urls();
  if (!urls.isEmpty() && urls.front().isLocalFile()) open(urls.front().toLocalFile());
}

void MainWindow::closeEvent(QCloseEvent* e) {
  job_->cancel();
  QMainWindow::closeEvent(e);
}

}  // namespace kiln::viewers
