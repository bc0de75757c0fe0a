// kiln-gui [FILE] [--input 2x16x64 ...] [--modes eager,default] [--source-dir DIR]
//          [--compare B] [--screenshot OUT.png [--panel NAME]]
// FILE: a TorchScript model (.pt; profiled with the given inputs, or a dialog asks), a session
// (.kiln), a TORCH_TRACE log or folder, or a profiler trace (.json, .json.gz).
// --compare B: once FILE is open, compare it with B (a session or anything `kiln import` takes).
#include <QApplication>
#include <QCommandLineParser>
#include <QCoreApplication>

#include <string>

#include "screenshot.h"
#include "viewers/main/main_window.h"

namespace {

struct Options {
  QCommandLineOption input{{"i", "input"}, "Input shape of one forward argument (repeat per argument)", "shape"};
  QCommandLineOption modes{"modes", "Comma-separated modes to profile a model in (default eager,default)", "modes"};
  QCommandLineOption sourceDir{"source-dir", "Folder with the model's Python sources (repeatable)", "dir"};
  QCommandLineOption compare{"compare", "Once FILE is open, compare it with this session, TORCH_TRACE log or trace",
                             "file"};
  QCommandLineOption screenshot{"screenshot", "Save a PNG of the window once FILE is open, then quit", "png"};
  QCommandLineOption panel{"panel",
                           "With --screenshot: only this panel (graph, breaks, guards, kernels, timeline, comparison, environment)",
                           "name"};
};

void describe(QCoreApplication& app, QCommandLineParser& parser, Options& o) {
  QCoreApplication::setOrganizationName("Kiln");
  QCoreApplication::setApplicationName("Kiln");
  QCoreApplication::setApplicationVersion(QString::fromStdString(kiln::api::version_description()));
  parser.setApplicationDescription(
      "Kiln workbench: graphs, graph breaks, guards, kernels, timelines and mode comparisons of compiled PyTorch "
      "models.");
  parser.addHelpOption();
  parser.addVersionOption();
  parser.addPositionalArgument("file", "Model (.pt, .pt2), session (.kiln), TORCH_TRACE log or folder, or profiler trace");
  parser.addOptions({o.input, o.modes, o.sourceDir, o.compare, o.screenshot, o.panel});
  parser.process(app);  // --help and --version print and exit here; bad options exit with a message
}

// --help and --version need no display: answer them before a window system is opened.
bool wants_text_only(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help" || a == "--help-all" || a == "-v" || a == "--version" || a == "-?") return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  if (wants_text_only(argc, argv)) {
    QCoreApplication core(argc, argv);
    QCommandLineParser parser;
    Options o;
    describe(core, parser, o);
    return 0;
  }
  QApplication app(argc, argv);
  QApplication::setApplicationDisplayName("Kiln");
  QCommandLineParser parser;
  Options o;
  describe(app, parser, o);
  const auto& input = o.input;
  const auto& modes = o.modes;
  const auto& sourceDir = o.sourceDir;
  const auto& screenshot = o.screenshot;
  const auto& panel = o.panel;

  kiln::viewers::MainWindow w;
  if (parser.isSet(sourceDir)) w.setSourceDirs(parser.values(sourceDir));
  const QStringList files = parser.positionalArguments();
  if (parser.isSet(screenshot)) {
    if (files.isEmpty()) parser.showHelp(2);
    w.setErrorBoxes(false);
    kiln::gui::take_screenshot_when_open(&w, parser.value(screenshot), parser.value(panel), parser.isSet(o.compare));
  }
  if (parser.isSet(o.compare)) {
    if (files.isEmpty()) parser.showHelp(2);
    const QString other = parser.value(o.compare);
    auto* once = new QObject(&w);
    QObject::connect(&w, &kiln::viewers::MainWindow::sessionOpened, once, [&w, other, once] {
      once->deleteLater();  // compare the file from the command line only, not later opens
      w.compareWith(other);
    });
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
