#include "viewers/environment/environment_panel.h"

#include <QHeaderView>
#include <QTableView>
#include <QVBoxLayout>

#include "viewers/common/row_table.h"
#include "viewers/environment/environment_model.h"

namespace kiln::viewers {

EnvironmentPanel::EnvironmentPanel(SelectionContext* ctx, QWidget* parent)
    : QWidget(parent), model_(new EnvironmentModel(this)) {
  table_ = make_row_table(this, "environmentTable");
  table_->setModel(model_);
  table_->horizontalHeader()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  layout->addWidget(table_);
  connect(ctx, &SelectionContext::selectionChanged, this, [this](const Selection& sel, unsigned parts) {
    if (parts & kSessionPart) model_->setSession(sel.session);
  });
  model_->setSession(ctx->current().session);
}

}  // namespace kiln::viewers
