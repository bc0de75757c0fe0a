// Kiln's main window: dockable panels (graph, graph breaks, guards, kernels, timeline, comparison)
// that all follow one SelectionContext, which the window owns. Opens .pt models (profiled in
// every requested mode, off the UI thread, with progress and Cancel), .kiln sessions, TORCH_TRACE
// logs or folders and profiler traces; by menu, drag and drop, recent files or command line.
// Compares the shown session with a second one (File > Compare with...: a session or anything
// `kiln import` takes; every panel then shows both). Exports reports with the same generators as
// `kiln report`. A file that cannot be opened shows
// one message naming it and the engine's reason, and the session shown before stays.
#pragma once

#include <QMainWindow>
#include <QMap>
#include <QString>
#include <QStringList>
#include <memory>

#include "viewers/main/report_export.h"
#include "viewers/main/session_job.h"
#include "viewers/selection/selection_context.h"

class QDockWidget;
class QLabel;
class QMenu;
class QProgressBar;
class QPushButton;

namespace kiln::viewers {

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  // Opens any supported path (see open_kind.h); a model asks for its example inputs.
  void open(const QString& path);
  // Profiles a model; with `inputs` empty, asks for them (and the modes) in a dialog.
  void openModel(const QString& path, const QStringList& inputs = {}, const QStringList& modes = {});
  void cancelJob();
  // Compares the shown session with the one at `path` (a .kiln session, a TORCH_TRACE log or
  // folder, a profiler trace), off the UI thread; every panel then shows both.
  void compareWith(const QString& path);
  void endComparison();
  void exportReport(ReportFormat format, const QString& path);

  SelectionContext* selection() const { return ctx_; }
  // Panel names: graph, breaks, guards, kernels, timeline, comparison.
  QDockWidget* dock(const QString& name) const { return docks_.value(name); }
  QWidget* panel(const QString& name) const;
  QStringList panelNames() const { return docks_.keys(); }
  bool busy() const { return job_->busy(); }
  // false: errors are reported through errorShown only (no message box), e.g. in tests.
  void setErrorBoxes(bool on) { errorBoxes_ = on; }
  // More folders where the breaks panel looks for the user's Python sources.
  void setSourceDirs(const QStringList& dirs);
  static QStringList recentFiles();

 Q_SIGNALS:
  void sessionOpened(const QString& source);
  void comparisonOpened(const QString& source);
  void errorShown(const QString& message);
  void jobEnded();

 protected:
  void dragEnterEvent(QDragEnterEvent* e) override;
  void dropEvent(QDropEvent* e) override;
  void closeEvent(QCloseEvent* e) override;

 private:
  void buildMenus();
  QDockWidget* addPanel(const QString& name, const QString& title, QWidget* panel, Qt::DockWidgetArea area);
  void onFinished(quint64 gen, std::shared_ptr<const session::Session> s, const QString& source,
                  const QString& session_path, const QString& note);
  void onCompared(quint64 gen, std::shared_ptr<const session::Session> other,
                  std::shared_ptr<const report::SessionDiff> diff, const QString& source);
  void onFailed(quint64 gen, const QString& source, const QString& message);
  void jobStarted(const QString& what);
  void jobStopped();
  void showError(const QString& title, const QString& message);
  void addRecent(const QString& path);
  void refreshRecentMenu();
  void raiseDefaultPanel();
  void updateTitle();

  SelectionContext* ctx_;
  SessionJob* job_;
  QMap<QString, QDockWidget*> docks_;
  QMenu* recentMenu_ = nullptr;
  QMenu* viewMenu_ = nullptr;
  QList<QAction*> sessionActions_;
  QProgressBar* progress_;
  QPushButton* cancel_;
  QLabel* sessionLabel_;
  QString source_;  // what the shown session was opened from
  std::shared_ptr<const session::Session> shown_;  // as opened (before display bounds): side A of a comparison
  QAction* compare_ = nullptr;
  QAction* endCompare_ = nullptr;
  QString pendingSource_;
  bool errorBoxes_ = true;
};

}  // namespace kiln::viewers
