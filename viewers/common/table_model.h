// Read-only table models with named columns.
//
// ColumnTableModel: the columns: one name per column, shown in the horizontal header; no columns
//   under a valid parent (a flat table). Subclasses give rowCount and data.
// RowTableModel<Row>: also holds the rows, one value per table row, replaced as a whole (a model
//   reset). Subclasses give the cells of a row (cell).
#pragma once

#include <QAbstractTableModel>
#include <QStringList>
#include <utility>
#include <vector>

namespace kiln::viewers {

class ColumnTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  int columnCount(const QModelIndex& parent = {}) const override;
  // The column's name for Qt::Horizontal and Qt::DisplayRole (nothing for a section out of
  // range); any other header as QAbstractTableModel gives it.
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

 protected:
  ColumnTableModel(QStringList columns, QObject* parent);
  // Renames every column (names for columns the model does not have are ignored); the views are
  // told with one headerDataChanged.
  void setColumnNames(const QStringList& columns);

 private:
  QStringList columns_;
};

template <typename Row>
class RowTableModel : public ColumnTableModel {
 public:
  int rowCount(const QModelIndex& parent = {}) const override { return parent.isValid() ? 0 : int(rows_.size()); }
  // The value of a row; nullptr when out of range (or for an invalid index).
  const Row* at(int row) const { return row >= 0 && row < int(rows_.size()) ? &rows_[size_t(row)] : nullptr; }
  const Row* at(const QModelIndex& index) const { return index.isValid() ? at(index.row()) : nullptr; }
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const final {
    const Row* row = at(index);
    return row ? cell(*row, index.column(), role) : QVariant();
  }

 protected:
  using ColumnTableModel::ColumnTableModel;
  // What data() answers for `role` at `column` of a row.
  virtual QVariant cell(const Row& row, int column, int role) const = 0;
  void setRows(std::vector<Row> rows) {
    beginResetModel();
    rows_ = std::move(rows);
    endResetModel();
  }

 private:
  std::vector<Row> rows_;
};

}  // namespace kiln::viewers
