// RecompileTableModel: the recompile history (report::recompile_history, as in the reports): the
// entry each recompile made, the call that triggered it, whether the recompile limit was hit, the
// reason and the guards that failed.
#pragma once

#include <QAbstractTableModel>
#include <vector>

#include "engine/api/report.h"

namespace kiln::viewers {

class RecompileTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { CompileId, Call, Limit, Reason, FailedGuards, ColumnCount };
  explicit RecompileTableModel(QObject* parent = nullptr);
  void setSession(const session::Session* s);  // nullptr clears; the model copies what it shows
  const report::RecompileEntry* entry(int row) const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

 private:
  std::vector<report::RecompileEntry> entries_;
};

}  // namespace kiln::viewers
