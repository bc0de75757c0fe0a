#include "viewers/guards/guard_diff_model.h"

#include <QBrush>
#include <QColor>

namespace kiln::viewers {

GuardDiffModel::GuardDiffModel(QObject* parent) : QAbstractTableModel(parent) {}

void GuardDiffModel::setChanges(std::vector<GuardChange> changes, const QString& before_name,
                                const QString& after_name) {
  beginResetModel();
  changes_ = std::move(changes);
  beforeName_ = before_name;
  afterName_ = after_name;
  endResetModel();
  Q_EMIT headerDataChanged(Qt::Horizontal, 0, ColumnCount - 1);
}

int GuardDiffModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(changes_.size()); }
int GuardDiffModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant GuardDiffModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= int(changes_.size())) return {};
  const auto& c = changes_[size_t(index.row())];
  if (role == Qt::DisplayRole || role == Qt::ToolTipRole) {
    switch (index.column()) {
      case Change: return QString(guard_change_name(c.kind));
      case Before: return QString::fromStdString(c.before);
      case After: return QString::fromStdString(c.after);
    }
  } else if (role == Qt::BackgroundRole && index.column() == Change) {
    switch (c.kind) {
      case GuardChange::Kind::Added: return QBrush(QColor(0xd8, 0xf5, 0xd8));
      case GuardChange::Kind::Removed: return QBrush(QColor(0xfa, 0xdb, 0xdb));
      case GuardChange::Kind::Changed: return QBrush(QColor(0xfc, 0xf0, 0xc8));
    }
  }
  return {};
}

QVariant GuardDiffModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return QAbstractTableModel::headerData(section, o, role);
  switch (section) {
    case Change: return QString("Change");
    case Before: return "In " + beforeName_;
    case After: return "In " + afterName_;
  }
  return {};
}

}  // namespace kiln::viewers
