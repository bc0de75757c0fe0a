#include "viewers/breaks/what_if_box.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QtConcurrent>
#include <filesystem>

namespace kiln::viewers {

WhatIfRequest what_if_request(const session::Session* s, const session::GraphBreakRecord* b) {
  WhatIfRequest r;
  if (!s || !b) {
    r.unavailable = "Select a graph break.";
    return r;
  }
  r.site = b->info;
  if (!b->compile_id.empty() || s->model.path.empty()) {
    r.unavailable = "What if… recompiles the model, and this session records no model Kiln can load "
                    "(an imported torch.compile run).";
    return r;
  }
  if (!std::filesystem::exists(s->model.path)) {
    r.unavailable = "What if… recompiles the model, and " + s->model.path + " is not on this machine.";
    return r;
  }
  r.model_path = s->model.path;
  std::vector<InputSpec> call;
  try {
    for (const auto& i : s->model.inputs) call.push_back(parse_input_spec(i));
  } catch (const std::exception& e) {
    r.unavailable = std::string("The session's inputs cannot be read: ") + e.what();
    return r;
  }
  r.calls.push_back(std::move(call));
  return r;
}

WhatIfBox::WhatIfBox(QWidget* parent) : QWidget(parent) {
  button_ = new QPushButton("What if…", this);
  button_->setObjectName("whatIfButton");
  button_->setToolTip("Recompile the model with this break removed (where that is sound), check it against eager "
                      "and measure the speedup");
  result_ = new QLabel(this);
  result_->setObjectName("whatIfResult");
  result_->setWordWrap(true);
  result_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  result_->setTextFormat(Qt::PlainText);
  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(button_, 0, Qt::AlignTop);
  layout->addWidget(result_, 1);
  pool_.setMaxThreadCount(1);
  connect(button_, &QPushButton::clicked, this, &WhatIfBox::run);
  connect(&watcher_, &QFutureWatcher<QString>::finished, this, [this] {
    if (watcher_.property("generation").toULongLong() != generation_) return;  // another break since
    result_->setText(watcher_.result());
    button_->setEnabled(request_.unavailable.empty());
    Q_EMIT resultShown();
  });
  setBreak(nullptr, nullptr);
}

WhatIfBox::~WhatIfBox() { watcher_.waitForFinished(); }

void WhatIfBox::setBreak(const session::Session* s, const session::GraphBreakRecord* b) {
  ++generation_;
  request_ = what_if_request(s, b);
  button_->setEnabled(request_.unavailable.empty());
  if (!b)
    result_->setText(QString());
  else if (!request_.unavailable.empty())
    result_->setText(QString::fromStdString(request_.unavailable));
  else
    result_->setText("Recompiles the model without this break where that is sound, checks it against eager and "
                     "measures what fixing it gains.");
}

QString WhatIfBox::resultText() const { return result_->text(); }

void WhatIfBox::waitForResult() {
  watcher_.waitForFinished();
  QCoreApplication::processEvents();
}

void WhatIfBox::run() {
  if (!request_.unavailable.empty()) return;
  const quint64 gen = ++generation_;
  button_->setEnabled(false);
  result_->setText("Recompiling without this break, checking against eager and measuring…");
  WhatIfRequest req = request_;
  watcher_.setProperty("generation", gen);
  watcher_.setFuture(QtConcurrent::run(&pool_, [req] {
    try {
      auto r = api::what_if(req.model_path, req.calls, {}, 10, req.site);
      return QString::fromStdString(r.sites.empty() ? std::string("No such break in the model.")
                                                    : api::what_if_site_text(r, r.sites.front()));
    } catch (const std::exception& e) {
      return QString("What if… failed: ") + QString::fromStdString(e.what());
    }
  }));
}

}  // namespace kiln::viewers
