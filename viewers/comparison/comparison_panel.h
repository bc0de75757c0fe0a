// ComparisonPanel: the runs of a session side by side (mode, backend, latency, compile cost,
// kernels, GPU busy, memory, speedup and error vs eager), a bar chart of the speedups and the
// observations Kiln draws from them. Selecting a row selects that run in the SelectionContext.
#pragma once

#include <QWidget>

#include "viewers/selection/selection_context.h"

class QListWidget;
class QTableView;

namespace kiln::viewers {

class RunTableModel;
class SpeedupChart;

class ComparisonPanel : public QWidget {
  Q_OBJECT
 public:
  explicit ComparisonPanel(SelectionContext* ctx, QWidget* parent = nullptr);

  QTableView* table() const { return table_; }
  SpeedupChart* chart() const { return chart_; }
  QListWidget* observations() const { return observations_; }

 private:
  void onSelectionChanged(const Selection& sel, unsigned parts);

  SelectionContext* ctx_;
  RunTableModel* model_;
  QTableView* table_;
  SpeedupChart* chart_;
  QListWidget* observations_;
  bool syncing_ = false;
};

}  // namespace kiln::viewers
