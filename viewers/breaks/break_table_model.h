// BreakTableModel: the deduplicated graph-break to-do list (report::ranked_break_groups, the same
// groups `kiln explain` and the reports show, most costly first where a run measured them) as a table:
// id, file:line (what the user goes to fix), measured cost per iteration, the part of it lost fusion
// across the break is (kernels Kiln's scheduler fuses when the regions are joined), its share of the step,
// reason, hint, hits, sites, category, module path, compile ids. A thin adapter over an immutable session.
#pragma once

#include <memory>
#include <string>

#include "engine/api/report.h"
#include "engine/api/session.h"
#include "viewers/common/table_model.h"

namespace kiln::viewers {

// The compiled region a break belongs to, as a compile id of the session: the record's own
// compile id (imports), else the first entry of the region the break ends, else of the region it
// resumes into. "" when the session has none of them.
std::string break_compile_id(const session::Session& s, const session::GraphBreakRecord& b);

class BreakTableModel : public RowTableModel<report::BreakGroup> {
  Q_OBJECT
 public:
  enum Column { Id, Location, Cost, LostFusion, Share, Reason, Hint, Hits, Sites, Category, Module, CompileIds, ColumnCount };

  explicit BreakTableModel(QObject* parent = nullptr);
  void setSession(std::shared_ptr<const session::Session> s);
  // The first record of the group on `row` (nullptr when out of range).
  const session::GraphBreakRecord* record(int row) const;
  const report::BreakGroup* group(int row) const { return at(row); }
  // The measured cost of the group on `row` in the session's shown run (nullptr when none).
  const session::BreakCost* cost(int row) const;

 private:
  QVariant cell(const report::BreakGroup& g, int column, int role) const override;

  std::shared_ptr<const session::Session> session_;  // the groups point into its records
  std::vector<session::BreakCost> costs_;             // report::break_costs_of the shown run
};

}  // namespace kiln::viewers
