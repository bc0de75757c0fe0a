#include "viewers/kernels/kernel_detail_models.h"

#include <QBrush>
#include <QColor>
#include <QFont>

namespace kiln::viewers {

AutotuneTableModel::AutotuneTableModel(QObject* parent) : RowTableModel({"Candidate config", "ms", ""}, parent) {}

QVariant AutotuneTableModel::cell(const session::AutotuneCandidate& c, int column, int role) const {
  if (role == Qt::DisplayRole) {
    switch (column) {
      case Config: return QString::fromStdString(c.config);
      case Ms: return c.ms < 0 ? QString("-") : QString::number(c.ms, 'f', 4);  // not timed (skipped)
      case Chosen: return c.chosen ? QString("chosen") : QString();
    }
  } else if (role == Qt::FontRole && c.chosen) {
    QFont f;
    f.setBold(true);
    return f;
  } else if (role == Qt::TextAlignmentRole && column == Ms) {
    return int(Qt::AlignRight | Qt::AlignVCenter);
  }
  return {};
}

FusionTableModel::FusionTableModel(QObject* parent)
    : RowTableModel({"Producer", "Consumer", "Decision", "Why"}, parent) {}

void FusionTableModel::setDecisions(const std::vector<session::FusionDecision>& all, const std::string& compile_id) {
  std::vector<session::FusionDecision> rows;
  for (const auto& d : all)
    if (compile_id.empty() || d.compile_id == compile_id) rows.push_back(d);
  setRows(std::move(rows));
}

QVariant FusionTableModel::cell(const session::FusionDecision& d, int column, int role) const {
  if (role == Qt::DisplayRole || role == Qt::ToolTipRole) {
    switch (column) {
      case First: return QString::fromStdString(d.first);
      case Second: return QString::fromStdString(d.second);
      case Fused: return d.fused ? QString("fused") : QString("kept apart");
      case Reason: return QString::fromStdString(d.reason);
    }
  } else if (role == Qt::ForegroundRole && column == Fused) {
    return QBrush(d.fused ? QColor(0x1a, 0x7f, 0x37) : QColor(0xa0, 0x40, 0x00));
  }
  return {};
}

}  // namespace kiln::viewers
