// GuardsPanel: per region its cache entries with their guards and symbols (a tree), the recompile
// history with the failing guards, a diff of two entries' guard sets, and the recompile-limit
// events. Selecting an entry selects that region in the SelectionContext; a region selected
// elsewhere is shown here and diffed against the entry before it. While the session is compared
// with another (B), B's entries can be picked as the second side ("B [0/0]"), a selected region
// is diffed against B's entry of the same compile id (guards added and removed), and a line
// names the regions whose guards, recompiles or graphs differ between the two. Where the session
// measured them (kiln explain --cost -o), what the recompiles cost per region and entry and the
// measured effect of following the advice (report/recompile_costs.h).
#pragma once

#include <string>

#include "viewers/common/session_panel.h"

class QComboBox;
class QLabel;
class QListWidget;
class QTableView;
class QTreeView;

namespace kiln::viewers {

class GuardDiffModel;
class GuardTreeModel;
class RecompileTableModel;

class GuardsPanel : public SessionPanel {
  Q_OBJECT
 public:
  explicit GuardsPanel(SelectionContext* ctx, QWidget* parent = nullptr);

  QTreeView* tree() const { return tree_; }
  QTableView* recompiles() const { return recompiles_; }
  QTableView* diff() const { return diff_; }
  QListWidget* limitEvents() const { return limits_; }
  QString comparisonText() const;  // the regions that differ from B's, as plain text
  // What recompiles cost (kiln explain --cost -o), as plain text; says so when not measured.
  QString recompileCostsText() const;
  // Diffs the guard sets of two entries by compile id (also sets the two pickers).
  void diffEntries(const std::string& before, const std::string& after);

 private:
  void onSelectionChanged(const Selection& sel, unsigned parts) override;
  void updateDiff();

  GuardTreeModel* treeModel_;
  RecompileTableModel* recompileModel_;
  GuardDiffModel* diffModel_;
  QTreeView* tree_;
  QTableView* recompiles_;
  QTableView* diff_;
  QComboBox* before_;
  QComboBox* after_;
  QLabel* diffSummary_;
  QLabel* compared_;
  QLabel* costs_;
  QListWidget* limits_;
};

}  // namespace kiln::viewers
