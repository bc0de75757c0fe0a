#include "viewers/common/session_panel.h"

#include <QLabel>
#include <QVBoxLayout>

namespace kiln::viewers {

SessionPanel::SessionPanel(SelectionContext* ctx, QWidget* parent) : QWidget(parent), ctx_(ctx) {}

void SessionPanel::followSelection(unsigned parts) {
  connect(ctx_, &SelectionContext::selectionChanged, this, &SessionPanel::onSelectionChanged);
  onSelectionChanged(ctx_->current(), parts);
}

QVBoxLayout* SessionPanel::panelLayout() {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  return layout;
}

QWidget* stacked_box(QWidget* parent, QWidget* top, QWidget* main) {
  auto* box = new QWidget(parent);
  auto* layout = new QVBoxLayout(box);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(top);
  layout->addWidget(main, 1);
  return box;
}

QWidget* titled_box(QWidget* parent, const QString& title, QWidget* main) {
  return stacked_box(parent, new QLabel("<b>" + title + "</b>"), main);
}

}  // namespace kiln::viewers
