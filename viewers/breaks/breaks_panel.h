// BreaksPanel: the graph-break to-do list (deduplicated) above the user's Python source around the
// selected break, its line marked, with the reason and the hint. Selecting a break selects its
// compiled region in the SelectionContext.
#pragma once

#include <string>
#include <vector>

#include "viewers/common/table_panel.h"

class QLabel;

namespace kiln::viewers {

class BreakTableModel;
class CodeView;

class BreaksPanel : public TablePanel<BreakTableModel> {
  Q_OBJECT
 public:
  explicit BreaksPanel(SelectionContext* ctx, QWidget* parent = nullptr);
  // More folders to look for the user's source files in (the recorded path rarely exists here).
  void setSourceDirs(const std::vector<std::string>& dirs);

  CodeView* source() const { return source_; }

 private:
  void onSelectionChanged(const Selection& sel, unsigned parts) override;
  void showBreak(int row);
  // Makes `row` current without writing to the selection (it follows the selection).
  void followRow(int row);
  int rowOfRegion(const std::string& compile_id) const;

  QLabel* detail_;
  CodeView* source_;
  std::vector<std::string> sourceDirs_;
};

}  // namespace kiln::viewers
