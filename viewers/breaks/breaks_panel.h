// BreaksPanel: the graph-break to-do list (deduplicated) above the user's Python source around the
// selected break, its line marked, with the reason and the hint. Selecting a break selects its
// compiled region in the SelectionContext.
#pragma once

#include <QWidget>
#include <string>
#include <vector>

#include "viewers/selection/selection_context.h"

class QLabel;
class QTableView;

namespace kiln::viewers {

class BreakTableModel;
class CodeView;

class BreaksPanel : public QWidget {
  Q_OBJECT
 public:
  explicit BreaksPanel(SelectionContext* ctx, QWidget* parent = nullptr);
  // More folders to look for the user's source files in (the recorded path rarely exists here).
  void setSourceDirs(const std::vector<std::string>& dirs);

  QTableView* table() const { return table_; }
  CodeView* source() const { return source_; }

 private:
  void onSelectionChanged(const Selection& sel, unsigned parts);
  void showBreak(int row);
  // Makes `row` current without writing to the selection (it follows the selection).
  void followRow(int row);
  int rowOfRegion(const std::string& compile_id) const;

  SelectionContext* ctx_;
  BreakTableModel* model_;
  QTableView* table_;
  QLabel* detail_;
  CodeView* source_;
  std::vector<std::string> sourceDirs_;
  bool syncing_ = false;
};

}  // namespace kiln::viewers
