#include "viewers/kernels/kernel_detail_models.h"

#include <QBrush>
#include <QColor>
#include <QFont>

namespace kiln::viewers {

AutotuneTableModel::AutotuneTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void AutotuneTableModel::setCandidates(std::vector<session::AutotuneCandidate> c) {
  beginResetModel();
  rows_ = std::move(c);
  endResetModel();
}

int AutotuneTableModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(rows_.size()); }
int AutotuneTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant AutotuneTableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= int(rows_.size())) return {};
  const auto& c = rows_[size_t(index.row())];
  if (role == Qt::DisplayRole) {
    switch (index.column()) {
      case Config: return QString::fromStdString(c.config);
      case Ms: return c.ms < 0 ? QString("-") : QString::number(c.ms, 'f', 4);  // not timed (skipped)
      case Chosen: return c.chosen ? QString("chosen") : QString();
    }
  } else if (role == Qt::FontRole && c.chosen) {
    QFont f;
    f.setBold(true);
    return f;
  } else if (role == Qt::TextAlignmentRole && index.column() == Ms) {
    return int(Qt::AlignRight | Qt::AlignVCenter);
  }
  return {};
}

QVariant AutotuneTableModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return QAbstractTableModel::headerData(section, o, role);
  static const char* names[] = {"Candidate config", "ms", ""};
  return section >= 0 && section < ColumnCount ? QString(names[section]) : QVariant();
}

FusionTableModel::FusionTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void FusionTableModel::setDecisions(const std::vector<session::FusionDecision>& all, const std::string& compile_id) {
  beginResetModel();
  rows_.clear();
  for (const auto& d : all)
    if (compile_id.empty() || d.compile_id == compile_id) rows_.push_back(d);
  endResetModel();
}

int FusionTableModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(rows_.size()); }
int FusionTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant FusionTableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= int(rows_.size())) return {};
  const auto& d = rows_[size_t(index.row())];
  if (role == Qt::DisplayRole || role == Qt::ToolTipRole) {
    switch (index.column()) {
      case First: return QString::fromStdString(d.first);
      case Second: return QString::fromStdString(d.second);
      case Fused: return d.fused ? QString("fused") : QString("kept apart");
      case Reason: return QString::fromStdString(d.reason);
    }
  } else if (role == Qt::ForegroundRole && index.column() == Fused) {
    return QBrush(d.fused ? QColor(0x1a, 0x7f, 0x37) : QColor(0xa0, 0x40, 0x00));
  }
  return {};
}

QVariant FusionTableModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return QAbstractTableModel::headerData(section, o, role);
  static const char* names[] = {"Producer", "Consumer", "Decision", "Why"};
  return section >= 0 && section < ColumnCount ? QString(names[section]) : QVariant();
}

}  // namespace kiln::viewers
