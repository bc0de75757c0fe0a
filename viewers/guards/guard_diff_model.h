// GuardDiffModel: diff_guards of two cache entries as a table (change, first entry, second entry).
#pragma once

#include <QAbstractTableModel>
#include <vector>

#include "viewers/guards/guard_diff.h"

namespace kiln::viewers {

class GuardDiffModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Change, Before, After, ColumnCount };
  explicit GuardDiffModel(QObject* parent = nullptr);
  void setChanges(std::vector<GuardChange> changes, const QString& before_name, const QString& after_name);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

 private:
  std::vector<GuardChange> changes_;
  QString beforeName_ = "first", afterName_ = "second";
};

}  // namespace kiln::viewers
