// EnvironmentPanel: the EnvironmentModel of the current session, as a two-column table.
#pragma once

#include <QWidget>

#include "viewers/selection/selection_context.h"

class QTableView;

namespace kiln::viewers {

class EnvironmentModel;

class EnvironmentPanel : public QWidget {
  Q_OBJECT
 public:
  explicit EnvironmentPanel(SelectionContext* ctx, QWidget* parent = nullptr);
  EnvironmentModel* model() const { return model_; }
  QTableView* table() const { return table_; }

 private:
  EnvironmentModel* model_;
  QTableView* table_;
};

}  // namespace kiln::viewers
