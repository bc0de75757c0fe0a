// BreakChangeModel: the graph breaks of two compared sessions (report::SessionDiff::breaks, matched
// by source line and reason) as a table: change (added in B, removed in B, in both), line, reason,
// module, hits in A and in B; added first, then removed, then those in both. A thin adapter over
// one immutable diff.
#pragma once

#include <memory>

#include "engine/api/report.h"
#include "viewers/common/table_model.h"

namespace kiln::viewers {

class BreakChangeModel : public RowTableModel<report::BreakChange> {
  Q_OBJECT
 public:
  enum Column { Change, Location, Reason, Module, HitsA, HitsB, ColumnCount };
  explicit BreakChangeModel(QObject* parent = nullptr);
  void setDiff(std::shared_ptr<const report::SessionDiff> d);
  int count(report::Change c) const;

 private:
  QVariant cell(const report::BreakChange& b, int column, int role) const override;
};

}  // namespace kiln::viewers
