#include "viewers/guards/recompile_table_model.h"

#include <QStringList>

namespace kiln::viewers {

RecompileTableModel::RecompileTableModel(QObject* parent)
    : RowTableModel({"Entry", "Call", "Limit", "Reason", "Failed guards"}, parent) {}

void RecompileTableModel::setSession(const session::Session* s) {
  setRows(s ? report::recompile_history(*s) : std::vector<report::RecompileEntry>{});
}

QVariant RecompileTableModel::cell(const report::RecompileEntry& e, int column, int role) const {
  if (role == Qt::DisplayRole || role == Qt::ToolTipRole) {
    switch (column) {
      case CompileId: return QString::fromStdString(e.compile_id);
      case Call: return e.call >= 0 ? QVariant(e.call) : QVariant(QString("?"));
      case Limit: return e.limit ? QString("limit hit: runs eagerly") : QString();
      case Reason: {
        QString r = QString::fromStdString(e.reason);
        return role == Qt::DisplayRole ? r.section('\n', 0, 0) : r;
      }
      case FailedGuards: {
        QStringList g;
        for (const auto& f : e.failed_guards) g << QString::fromStdString(f);
        return g.join(role == Qt::DisplayRole ? "; " : "\n");
      }
    }
  }
  return {};
}

}  // namespace kiln::viewers
