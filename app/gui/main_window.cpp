#include "main_window.h"

#include <QAction>
#include <QApplication>
#include <QFileDialog>
#include <QFileInfo>
#include <QFontDatabase>
#include <QInputDialog>
#include <QMenuBar>
#include <QMessageBox>
#include <QStatusBar>
#include <QtConcurrent/QtConcurrent>

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  setWindowTitle("Kiln");
  graphText_ = new QPlainTextEdit(this);
  graphText_->setReadOnly(true);
  graphText_->setLineWrapMode(QPlainTextEdit::NoWrap);
  graphText_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  graphText_->setPlaceholderText("Open a TorchScript model (File > Open) to see its graph.");
  setCentralWidget(graphText_);

  auto* file = menuBar()->addMenu("&File");
  auto* open = file->addAction("&Open model...");
  open->setShortcut(QKeySequence::Open);
  connect(open, &QAction::triggered, this, [this] {
    QString path = QFileDialog::getOpenFileName(this, "Open TorchScript model", QString(), "TorchScript (*.pt *.pth);;All files (*)");
    if (!path.isEmpty()) openModel(path);
  });
  file->addSeparator();
  auto* quit = file->addAction("&Quit");
  quit->setShortcut(QKeySequence::Quit);
  connect(quit, &QAction::triggered, qApp, &QApplication::quit);

  connect(&watcher_, &QFutureWatcher<Outcome>::finished, this, &MainWindow::showOutcome);
  statusBar()->showMessage(QString("Kiln %1 on LibTorch %2")
                               .arg(QString::fromStdString(kiln::api::version()),
                                    QString::fromStdString(kiln::api::libtorch_version())));
  resize(1100, 800);
}

void MainWindow::openModel(const QString& path, QStringList inputs) {
  if (inputs.isEmpty()) {
    bool ok = false;
    QString text = QInputDialog::getText(this, "Example inputs",
                                         "Input shapes for forward, one per argument (e.g. 4x64, 2x3x32x32):",
                                         QLineEdit::Normal, "4x64", &ok);
    if (!ok) return;
    inputs = text.split(',', Qt::SkipEmptyParts);
  }
  currentPath_ = path;
  const quint64 gen = ++generation_;
  statusBar()->showMessage("Inspecting " + path + "...");
  std::string p = path.toStdString();
  std::vector<std::string> in;
  for (const auto& s : inputs) in.push_back(s.trimmed().toStdString());
  watcher_.setFuture(QtConcurrent::run([p, in, gen]() -> Outcome {
    Outcome o;
    try {
      std::vector<kiln::InputSpec> specs;
      for (const auto& s : in) specs.push_back(kiln::parse_input_spec(s));
      auto r = kiln::api::inspect(p, specs);
      o.ok = true;
      o.text = QString::fromStdString(kiln::ir::to_readable(r.graph));
    } catch (const std::exception& e) {
      o.error = QString::fromStdString(e.what());
    }
    (void)gen;
    return o;
  }));
}

void MainWindow::showOutcome() {
  Outcome o = watcher_.result();
  if (!o.ok) {
    statusBar()->showMessage("Failed to open " + currentPath_);
    QMessageBox::warning(this, "Kiln", o.error);
    return;
  }
  graphText_->setPlainText(o.text);
  setWindowTitle("Kiln - " + QFileInfo(currentPath_).fileName());
  statusBar()->showMessage("Opened " + currentPath_);
}
