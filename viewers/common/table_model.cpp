#include "viewers/common/table_model.h"

namespace kiln::viewers {

ColumnTableModel::ColumnTableModel(QStringList columns, QObject* parent)
    : QAbstractTableModel(parent), columns_(std::move(columns)) {}

int ColumnTableModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : int(columns_.size());
}

QVariant ColumnTableModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return QAbstractTableModel::headerData(section, o, role);
  return section >= 0 && section < int(columns_.size()) ? QVariant(columns_[section]) : QVariant();
}

void ColumnTableModel::setColumnNames(const QStringList& columns) {
  for (int c = 0; c < int(columns_.size()) && c < int(columns.size()); ++c) columns_[c] = columns[c];
  Q_EMIT headerDataChanged(Qt::Horizontal, 0, int(columns_.size()) - 1);
}

}  // namespace kiln::viewers
