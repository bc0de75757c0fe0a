// ComparisonPanel: the runs of a session side by side (mode, backend, latency, compile cost,
// kernels, GPU busy, memory, speedup and error vs eager), a bar chart of the speedups and the
// observations Kiln draws from them. Selecting a row selects that run in the SelectionContext.
#pragma once

#include "viewers/common/table_panel.h"

class QListWidget;

namespace kiln::viewers {

class RunTableModel;
class SpeedupChart;

class ComparisonPanel : public TablePanel<RunTableModel> {
  Q_OBJECT
 public:
  explicit ComparisonPanel(SelectionContext* ctx, QWidget* parent = nullptr);

  SpeedupChart* chart() const { return chart_; }
  QListWidget* observations() const { return observations_; }

 private:
  void onSelectionChanged(const Selection& sel, unsigned parts) override;

  SpeedupChart* chart_;
  QListWidget* observations_;
};

}  // namespace kiln::viewers
