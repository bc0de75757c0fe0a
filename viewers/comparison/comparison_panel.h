// ComparisonPanel: the runs of a session side by side (mode, backend, latency, compile cost,
// kernels, GPU busy, memory, speedup and error vs eager), a bar chart of the speedups and the
// observations Kiln draws from them. Selecting a row selects that run in the SelectionContext.
// While the session is compared with another (Selection::compare), the panel shows both: the two
// sides, their runs paired side by side, device time by module and by source line (A, B, B − A),
// and what changed in graph breaks and compiled regions; "End comparison" returns to one session.
#pragma once

#include "viewers/common/table_panel.h"

class QLabel;
class QListWidget;
class QStackedWidget;
class QTabWidget;

namespace kiln::viewers {

class RunPairModel;
class RunTableModel;
class SpeedupChart;
class StructureModel;

class ComparisonPanel : public TablePanel<RunTableModel> {
  Q_OBJECT
 public:
  explicit ComparisonPanel(SelectionContext* ctx, QWidget* parent = nullptr);

  SpeedupChart* chart() const { return chart_; }
  QListWidget* observations() const { return observations_; }
  // The comparison page (shown while a comparison is open).
  bool comparing() const;
  QTableView* runPairs() const { return pairs_; }
  QTableView* modules() const { return modules_; }
  QTableView* lines() const { return lines_; }
  QString sidesText() const;    // the two sides, as plain text
  QString changesText() const;  // breaks and regions that changed, as plain text

 private:
  void onSelectionChanged(const Selection& sel, unsigned parts) override;
  void showComparison(const Selection& sel);

  SpeedupChart* chart_;
  QListWidget* observations_;
  QStackedWidget* pages_;
  QLabel* sides_;
  QLabel* structure_;
  QLabel* changes_;
  RunPairModel* pairModel_;
  StructureModel* moduleModel_;
  StructureModel* lineModel_;
  QTableView* pairs_;
  QTableView* modules_;
  QTableView* lines_;
  QTabWidget* tabs_;
};

}  // namespace kiln::viewers
