// kiln-gui [MODEL.pt [--input 4x64 ...]]
#include <QApplication>
#include <QCommandLineParser>
#include <QTimer>

#include "main_window.h"

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setApplicationName("Kiln");
  QApplication::setApplicationVersion(QString::fromStdString(kiln::api::version()));
  QCommandLineParser parser;
  parser.setApplicationDescription("Kiln workbench: graphs, graph breaks, guards, kernels and timelines of compiled PyTorch models.");
  parser.addHelpOption();
  parser.addVersionOption();
  parser.addPositionalArgument("model", "TorchScript model to open");
  QCommandLineOption input({"i", "input"}, "Input shape for forward (repeat per argument)", "shape");
  QCommandLineOption screenshot("screenshot", "Save a PNG of the window after loading, then quit", "file");
  parser.addOption(input);
  parser.addOption(screenshot);
  parser.process(app);
  MainWindow w;
  w.show();
  if (!parser.positionalArguments().isEmpty())
    w.openModel(parser.positionalArguments().first(), parser.values(input));
  if (parser.isSet(screenshot)) {
    const QString file = parser.value(screenshot);
    QObject::connect(&app, &QApplication::lastWindowClosed, &app, &QApplication::quit);
    auto* timer = new QTimer(&w);
    QObject::connect(timer, &QTimer::timeout, &w, [&w, file, timer] {
      static int ticks = 0;
      if (w.windowTitle() != "Kiln" || ++ticks > 100) {
        timer->stop();
        w.grab().save(file);
        QApplication::quit();
      }
    });
    timer->start(200);
  }
  return app.exec();
}
