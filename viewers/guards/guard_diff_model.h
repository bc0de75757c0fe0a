// GuardDiffModel: diff_guards of two cache entries as a table (change, first entry, second entry).
#pragma once

#include <vector>

#include "viewers/common/table_model.h"
#include "viewers/guards/guard_diff.h"

namespace kiln::viewers {

class GuardDiffModel : public RowTableModel<GuardChange> {
  Q_OBJECT
 public:
  enum Column { Change, Before, After, ColumnCount };
  explicit GuardDiffModel(QObject* parent = nullptr);
  // The entries' names head the Before and After columns ("In <name>").
  void setChanges(std::vector<GuardChange> changes, const QString& before_name, const QString& after_name);

 private:
  QVariant cell(const GuardChange& c, int column, int role) const override;
};

}  // namespace kiln::viewers
