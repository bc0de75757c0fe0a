// BreaksPanel: the graph-break to-do list (deduplicated) above the user's Python source around the
// selected break, its line marked, with the reason and the hint. Selecting a break selects its
// compiled region in the SelectionContext. "What if…" below the detail measures what removing the
// selected break would gain (WhatIfBox). While the session is compared with another, a table
// below lists the breaks added and removed in it (matched by line and reason).
#pragma once

#include <string>
#include <vector>

#include "viewers/common/table_panel.h"

class QLabel;

namespace kiln::viewers {

class BreakChangeModel;
class BreakTableModel;
class CodeView;
class WhatIfBox;

class BreaksPanel : public TablePanel<BreakTableModel> {
  Q_OBJECT
 public:
  explicit BreaksPanel(SelectionContext* ctx, QWidget* parent = nullptr);
  // More folders to look for the user's source files in (the recorded path rarely exists here).
  void setSourceDirs(const std::vector<std::string>& dirs);

  CodeView* source() const { return source_; }
  WhatIfBox* whatIf() const { return whatIf_; }
  QTableView* changes() const { return changes_; }

 private:
  void onSelectionChanged(const Selection& sel, unsigned parts) override;
  void showBreak(int row);
  // Makes `row` current without writing to the selection (it follows the selection).
  void followRow(int row);
  int rowOfRegion(const std::string& compile_id) const;

  QLabel* detail_;
  CodeView* source_;
  WhatIfBox* whatIf_;
  std::vector<std::string> sourceDirs_;
  BreakChangeModel* changeModel_;
  QTableView* changes_;
  QLabel* changesTitle_;
  QWidget* changesBox_;
};

}  // namespace kiln::viewers
