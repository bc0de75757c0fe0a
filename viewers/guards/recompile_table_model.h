// RecompileTableModel: the recompile history (report::recompile_history, as in the reports): the
// entry each recompile made, the call that triggered it, whether the recompile limit was hit, the
// reason and the guards that failed.
#pragma once

#include "engine/api/report.h"
#include "viewers/common/table_model.h"

namespace kiln::viewers {

class RecompileTableModel : public RowTableModel<report::RecompileEntry> {
  Q_OBJECT
 public:
  enum Column { CompileId, Call, Limit, Reason, FailedGuards, ColumnCount };
  explicit RecompileTableModel(QObject* parent = nullptr);
  void setSession(const session::Session* s);  // nullptr clears; the model copies what it shows
  const report::RecompileEntry* entry(int row) const { return at(row); }

 private:
  QVariant cell(const report::RecompileEntry& e, int column, int role) const override;
};

}  // namespace kiln::viewers
