// TablePanel<Model>: a SessionPanel built around one list: a Model (constructed with the panel as
// its parent) in a row table (make_row_table) named `table_name`. The panel lays the table out.
#pragma once

#include <QTableView>

#include "viewers/common/row_table.h"
#include "viewers/common/session_panel.h"

namespace kiln::viewers {

template <typename Model>
class TablePanel : public SessionPanel {
 public:
  QTableView* table() const { return table_; }
  Model* model() const { return model_; }

 protected:
  TablePanel(SelectionContext* ctx, QWidget* parent, const char* table_name)
      : SessionPanel(ctx, parent), model_(new Model(this)), table_(make_row_table(this, table_name)) {
    table_->setModel(model_);
  }

  Model* const model_;
  QTableView* const table_;
};

}  // namespace kiln::viewers
