// kiln-gui --screenshot OUT.png [--panel NAME]: once the file given on the command line is open,
// (and, with --compare, once the comparison is open) saves a PNG of the whole window (or of one panel, shown alone in the window) and quits.
// Exit status 0 when saved; 1 when the file could not be opened or the PNG not written.
#pragma once

#include <QString>

namespace kiln::viewers {
class MainWindow;
}

namespace kiln::gui {

// Arms the window: the capture happens after the next sessionOpened, or comparisonOpened when
// `after_comparison` (or failure).
void take_screenshot_when_open(kiln::viewers::MainWindow* window, const QString& out_png, const QString& panel,
                               bool after_comparison = false);

}  // namespace kiln::gui
