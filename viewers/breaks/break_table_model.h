// BreakTableModel: the deduplicated graph-break to-do list (report::group_breaks, the same groups
// `kiln explain` and the reports show) as a table: id, category, reason, hint, hits, sites, module
// path, file:line, compile ids (the file:line first: it is what the user goes to fix). A thin adapter over an immutable session.
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
  enum Column { Id, Location, Reason, Hint, Hits, Sites, Category, Module, CompileIds, ColumnCount };

  explicit BreakTableModel(QObject* parent = nullptr);
  void setSession(std::shared_ptr<const session::Session> s);
  // The first record of the group on `row` (nullptr when out of range).
  const session::GraphBreakRecord* record(int row) const;
  const report::BreakGroup* group(int row) const { return at(row); }

 private:
  QVariant cell(const report::BreakGroup& g, int column, int role) const override;

  std::shared_ptr<const session::Session> session_;  // the groups point into its records
};

}  // namespace kiln::viewers
