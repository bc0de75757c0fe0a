// EnvironmentPanel: the EnvironmentModel of the current session, as a two-column table.
#pragma once

#include "viewers/common/table_panel.h"

namespace kiln::viewers {

class EnvironmentModel;

class EnvironmentPanel : public TablePanel<EnvironmentModel> {
  Q_OBJECT
 public:
  explicit EnvironmentPanel(SelectionContext* ctx, QWidget* parent = nullptr);

 private:
  void onSelectionChanged(const Selection& sel, unsigned parts) override;
};

}  // namespace kiln::viewers
