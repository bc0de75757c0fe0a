#include "viewers/guards/guard_diff_model.h"

#include <QBrush>
#include <QColor>

namespace kiln::viewers {

namespace {
QStringList column_names(const QString& before_name, const QString& after_name) {
  return {"Change", "In " + before_name, "In " + after_name};
}
}  // namespace

GuardDiffModel::GuardDiffModel(QObject* parent) : RowTableModel(column_names("first", "second"), parent) {}

void GuardDiffModel::setChanges(std::vector<GuardChange> changes, const QString& before_name,
                                const QString& after_name) {
  setRows(std::move(changes));
  setColumnNames(column_names(before_name, after_name));
}

QVariant GuardDiffModel::cell(const GuardChange& c, int column, int role) const {
  if (role == Qt::DisplayRole || role == Qt::ToolTipRole) {
    switch (column) {
      case Change: return QString(guard_change_name(c.kind));
      case Before: return QString::fromStdString(c.before);
      case After: return QString::fromStdString(c.after);
    }
  } else if (role == Qt::BackgroundRole && column == Change) {
    switch (c.kind) {
      case GuardChange::Kind::Added: return QBrush(QColor(0xd8, 0xf5, 0xd8));
      case GuardChange::Kind::Removed: return QBrush(QColor(0xfa, 0xdb, 0xdb));
      case GuardChange::Kind::Changed: return QBrush(QColor(0xfc, 0xf0, 0xc8));
    }
  }
  return {};
}

}  // namespace kiln::viewers
