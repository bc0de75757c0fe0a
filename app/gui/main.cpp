// kiln-gui [FILE] [--input 2x16x64 ...] [--modes eager,default] [--source-dir DIR]
//          [--screenshot OUT.png [--panel NAME]]
// FILE: a TorchScript model (.pt; profiled with the given inputs, or a dialog asks), a session
// (.kiln), a TORCH_TRACE log or folder, or a profiler trace (.json, .json.gz).
#include <QApplication>
#include <QCommandLineParser>

#include "screenshot.h"
#include "viewers/main/main_window.h"

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setOrganizationName("Kiln");
  QApplication::setApplicationName("Kiln");
  QApplication::setApplicationVersion(QString::fromStdString(kiln::api::version()));
  QCommandLineParser parser;
  parser.setApplicationDescription(
      "Kiln workbench: graphs, graph breaks, guards, kernels, timelines and mode comparisons of compiled PyTorch "
      "models.");
  parser.addHelpOption();
  parser.addVersionOption();
  parser.addPositionalArgument("file", "Model (.pt), session (.kiln), TORCH_TRACE log or folder, or profiler trace");
  QCommandLineOption input({"i", "input"}, "Input shape of one forward argument (repeat per argument)", "shape");
  QCommandLineOption modes("modes", "Comma-separated modes to profile a model in (default eager,default)", "modes");
  QCommandLineOption sourceDir("source-dir", "Folder with the model's Python sources (repeatable)", "dir");
  QCommandLineOption screenshot("screenshot", "Save a PNG of the window once FILE is open, then quit", "png");
  QCommandLineOption panel("panel", "With --screenshot: only this panel (graph, breaks, guards, kernels, timeline, "
                                    "comparison)", "name");
  parser.addOptions({input, modes, sourceDir, screenshot, panel});
  parser.process(app);

  kiln::viewers::MainWindow w;
  if (parser.isSet(sourceDir)) w.setSourceDirs(parser.values(sourceDir));
  const QStringList files = parser.positionalArguments();
  if (parser.isSet(screenshot)) {
    if (files.isEmpty()) parser.showHelp(2);
    w.setErrorBoxes(false);
    kiln::gui::take_screenshot_when_open(&w, parser.value(screenshot), parser.value(panel));
  }
  w.show();
  if (!files.isEmpty()) {
    if (parser.isSet(input))
      w.openModel(files.first(), parser.values(input), parser.value(modes).split(',', Qt::SkipEmptyParts));
    else
      w.open(files.first());
  }
  return app.exec();
}
