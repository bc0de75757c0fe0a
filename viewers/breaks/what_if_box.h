// WhatIfBox: the breaks panel's "What if…" button and its answer. For the selected break it runs
// `kiln explain --what-if` for that break alone (api::what_if) on the session's model and inputs, off
// the UI thread, and shows whether Kiln can remove the break soundly, the rewrite, the check against
// eager and the measured speedup (or why not).
#pragma once

#include <QFutureWatcher>
#include <QString>
#include <QThreadPool>
#include <QWidget>
#include <string>

#include "engine/api/kiln.h"
#include "engine/api/what_if.h"

class QLabel;
class QPushButton;

namespace kiln::viewers {

// What the button would run for `b` in session `s`: the model path and one call of its inputs; or why
// it cannot run (no model recorded, an imported run, the file missing here).
struct WhatIfRequest {
  std::string model_path;
  std::vector<std::vector<InputSpec>> calls;
  capture::GraphBreak site;
  std::string unavailable;  // empty when the request can run
};
WhatIfRequest what_if_request(const session::Session* s, const session::GraphBreakRecord* b);

class WhatIfBox : public QWidget {
  Q_OBJECT
 public:
  explicit WhatIfBox(QWidget* parent = nullptr);
  ~WhatIfBox() override;
  // The break the button asks about (null: none selected); a result still running for another is dropped.
  void setBreak(const session::Session* s, const session::GraphBreakRecord* b);

  QPushButton* button() const { return button_; }
  QString resultText() const;
  // Waits for the running what-if, if any (tests).
  void waitForResult();

 Q_SIGNALS:
  void resultShown();

 private:
  void run();

  QPushButton* button_;
  QLabel* result_;
  WhatIfRequest request_;
  QFutureWatcher<QString> watcher_;
  QThreadPool pool_;
  quint64 generation_ = 0;
};

}  // namespace kiln::viewers
