#include "screenshot.h"

#include <QApplication>
#include <QDockWidget>
#include <QPixmap>
#include <QTimer>
#include <cstdio>

#include "viewers/main/main_window.h"

namespace kiln::gui {

void take_screenshot_when_open(viewers::MainWindow* w, const QString& out_png, const QString& panel,
                               bool after_comparison) {
  if (!panel.isEmpty() && !w->dock(panel)) {
    std::fprintf(stderr, "--panel '%s': use one of %s\n", qPrintable(panel), qPrintable(w->panelNames().join(", ")));
    QTimer::singleShot(0, qApp, [] { QApplication::exit(2); });
    return;
  }
  QObject::connect(w, &viewers::MainWindow::errorShown, qApp, [](const QString& message) {
    std::fprintf(stderr, "%s\n", qPrintable(message));
    QApplication::exit(1);
  });
  auto capture = [w, out_png, panel] {
    if (!panel.isEmpty()) {
      for (const auto& name : w->panelNames())
        if (name != panel) w->dock(name)->hide();
      w->dock(panel)->show();
      w->dock(panel)->raise();
    }
    // Let layouts, charts and views settle before grabbing.
    QTimer::singleShot(600, w, [w, out_png] {
      const bool ok = w->grab().save(out_png);
      std::fprintf(stderr, ok ? "saved %s\n" : "cannot write %s\n", qPrintable(out_png));
      QApplication::exit(ok ? 0 : 1);
    });
  };
  if (after_comparison)
    QObject::connect(w, &viewers::MainWindow::comparisonOpened, w, capture);
  else
    QObject::connect(w, &viewers::MainWindow::sessionOpened, w, capture);
}

}  // namespace kiln::gui
