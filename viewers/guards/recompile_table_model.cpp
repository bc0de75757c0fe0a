#include "viewers/guards/recompile_table_model.h"

#include <QStringList>

namespace kiln::viewers {

RecompileTableModel::RecompileTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void RecompileTableModel::setSession(const session::Session* s) {
  beginResetModel();
  entries_ = s ? report::recompile_history(*s) : std::vector<report::RecompileEntry>{};
  endResetModel();
}

const report::RecompileEntry* RecompileTableModel::entry(int row) const {
  return row >= 0 && row < int(entries_.size()) ? &entries_[size_t(row)] : nullptr;
}

int RecompileTableModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(entries_.size()); }
int RecompileTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant RecompileTableModel::data(const QModelIndex& index, int role) const {
  const auto* e = index.isValid() ? entry(index.row()) : nullptr;
  if (!e) return {};
  if (role == Qt::DisplayRole || role == Qt::ToolTipRole) {
    switch (index.column()) {
      case CompileId: return QString::fromStdString(e->compile_id);
      case Call: return e->call >= 0 ? QVariant(e->call) : QVariant(QString("?"));
      case Limit: return e->limit ? QString("limit hit: runs eagerly") : QString();
      case Reason: {
        QString r = QString::fromStdString(e->reason);
        return role == Qt::DisplayRole ? r.section('\n', 0, 0) : r;
      }
      case FailedGuards: {
        QStringList g;
        for (const auto& f : e->failed_guards) g << QString::fromStdString(f);
        return g.join(role == Qt::DisplayRole ? "; " : "\n");
      }
    }
  }
  return {};
}

QVariant RecompileTableModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return QAbstractTableModel::headerData(section, o, role);
  static const char* names[] = {"Entry", "Call", "Limit", "Reason", "Failed guards"};
  return section >= 0 && section < ColumnCount ? QString(names[section]) : QVariant();
}

}  // namespace kiln::viewers
