#include "viewers/breaks/break_changes.h"

#include <QBrush>
#include <QColor>
#include <algorithm>

namespace kiln::viewers {

namespace {
int rank(report::Change c) { return c == report::Change::Added ? 0 : c == report::Change::Removed ? 1 : 2; }
QString change_text(report::Change c) {
  return c == report::Change::Added ? "added in B" : c == report::Change::Removed ? "removed in B" : "in both";
}
}  // namespace

BreakChangeModel::BreakChangeModel(QObject* parent)
    : RowTableModel({"Change", "Line", "Reason", "Module", "Hits A", "Hits B"}, parent) {}

void BreakChangeModel::setDiff(std::shared_ptr<const report::SessionDiff> d) {
  std::vector<report::BreakChange> rows = d ? d->breaks : std::vector<report::BreakChange>{};
  std::stable_sort(rows.begin(), rows.end(), [](const auto& x, const auto& y) { return rank(x.change) < rank(y.change); });
  setRows(std::move(rows));
}

int BreakChangeModel::count(report::Change c) const {
  int n = 0;
  for (int r = 0; r < rowCount(); ++r) n += at(r)->change == c;
  return n;
}

QVariant BreakChangeModel::cell(const report::BreakChange& b, int column, int role) const {
  if (role == Qt::DisplayRole) {
    switch (column) {
      case Change: return change_text(b.change);
      case Location: return QString::fromStdString(b.where);
      case Reason: return QString::fromStdString(b.reason.substr(0, b.reason.find('\n')));
      case Module: return QString::fromStdString(b.module);
      case HitsA: return b.change == report::Change::Added ? QVariant(QString("–")) : QVariant(b.hits_a);
      case HitsB: return b.change == report::Change::Removed ? QVariant(QString("–")) : QVariant(b.hits_b);
    }
  } else if (role == Qt::ForegroundRole && column == Change) {
    if (b.change == report::Change::Added) return QBrush(QColor(0xb0, 0x20, 0x20));
    if (b.change == report::Change::Removed) return QBrush(QColor(0x1a, 0x7f, 0x37));
  } else if (role == Qt::ToolTipRole && column == Reason) {
    return QString::fromStdString(b.reason);
  } else if (role == Qt::TextAlignmentRole && (column == HitsA || column == HitsB)) {
    return int(Qt::AlignRight | Qt::AlignVCenter);
  }
  return {};
}

}  // namespace kiln::viewers
