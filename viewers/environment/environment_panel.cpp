#include "viewers/environment/environment_panel.h"

#include <QHeaderView>
#include <QTableView>
#include <QVBoxLayout>

#include "viewers/environment/environment_model.h"

namespace kiln::viewers {

EnvironmentPanel::EnvironmentPanel(SelectionContext* ctx, QWidget* parent)
    : TablePanel(ctx, parent, "environmentTable") {
  table_->horizontalHeader()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
  panelLayout()->addWidget(table_);
  followSelection();
}

void EnvironmentPanel::onSelectionChanged(const Selection& sel, unsigned parts) {
  if (parts & kSessionPart) model_->setSession(sel.session);
}

}  // namespace kiln::viewers
