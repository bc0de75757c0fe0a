// Kiln's main window: opens a TorchScript model, asks for example input shapes and shows
// the captured graph. Work runs off the UI thread; results come back queued.
#pragma once

#include <QFutureWatcher>
#include <QMainWindow>
#include <QPlainTextEdit>
#include <QString>
#include <QStringList>

#include "engine/api/kiln.h"

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(QWidget* parent = nullptr);
  // Opens `path` with the given input shapes ("4x64"); asks for shapes when empty.
  void openModel(const QString& path, QStringList inputs = {});

 private:
  struct Outcome {
    bool ok = false;
    QString text;
    QString error;
  };
  void showOutcome();

  QPlainTextEdit* graphText_ = nullptr;
  QFutureWatcher<Outcome> watcher_;
  QString currentPath_;
  quint64 generation_ = 0;
};
