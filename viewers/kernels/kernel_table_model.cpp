#include "viewers/kernels/kernel_table_model.h"

namespace kiln::viewers {

KernelTableModel::KernelTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void KernelTableModel::setSession(std::shared_ptr<const session::Session> s, int run) {
  beginResetModel();
  session_ = std::move(s);
  run_ = run;
  times_ = session_ ? report::kernel_times(*session_, run) : report::KernelTimes{};
  endResetModel();
}

void KernelTableModel::setRun(int run) {
  run_ = run;
  if (!session_) return;
  times_ = report::kernel_times(*session_, run);
  if (rowCount() > 0) Q_EMIT dataChanged(index(0, Launches), index(rowCount() - 1, Share));
}

const session::Kernel* KernelTableModel::kernel(int row) const {
  if (!session_ || row < 0 || row >= int(session_->kernels.size())) return nullptr;
  return &session_->kernels[size_t(row)];
}

int KernelTableModel::rowOf(const std::string& name, const std::string& compile_id) const {
  if (!session_) return -1;
  for (size_t i = 0; i < session_->kernels.size(); ++i)
    if (session_->kernels[i].name == name && (compile_id.empty() || session_->kernels[i].compile_id == compile_id))
      return int(i);
  return -1;
}

int KernelTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() || !session_ ? 0 : int(session_->kernels.size());
}
int KernelTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant KernelTableModel::data(const QModelIndex& index, int role) const {
  const auto* k = index.isValid() ? kernel(index.row()) : nullptr;
  if (!k) return {};
  const report::KernelTime* kt = report::find_kernel_time(times_, *k);
  if (role == Qt::DisplayRole) {
    switch (index.column()) {
      case Name: return QString::fromStdString(k->name);
      case Language: return QString::fromStdString(k->language);
      case Region: return QString::fromStdString(k->compile_id);
      case Launch: return QString::fromStdString(k->launch_config);
      case Registers: return k->registers > 0 ? QVariant(k->registers) : QVariant(QString("–"));
      case Shared: return k->shared_bytes > 0 ? QVariant(k->shared_bytes) : QVariant(QString("–"));
      case Launches: return kt ? QVariant(kt->launches) : QVariant(QString("–"));
      case TimeMs: return kt ? QVariant(QString::number(double(kt->total_ns) / 1e6, 'f', 3)) : QVariant(QString("–"));
      case Share: return kt ? QVariant(QString::number(kt->share * 100, 'f', 1) + " %") : QVariant(QString("–"));
    }
  } else if (role == Qt::ToolTipRole) {
    if (index.column() == Launch) return QString::fromStdString(k->launch_config);
    if (index.column() == Name)
      return QString::fromStdString(k->name) + QString("\n%1 graph node(s)").arg(k->nodes.size());
  } else if (role == Qt::TextAlignmentRole) {
    if (index.column() >= Launches && index.column() <= Shared) return int(Qt::AlignRight | Qt::AlignVCenter);
  } else if (role == Qt::UserRole && index.column() == Share) {
    return kt ? kt->share : 0.0;
  }
  return {};
}

QVariant KernelTableModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return QAbstractTableModel::headerData(section, o, role);
  static const char* names[] = {"Kernel", "Language", "Region", "Launches", "Time ms", "Share", "Registers",
                                "Shared B", "Launch config"};
  return section >= 0 && section < ColumnCount ? QString(names[section]) : QVariant();
}

}  // namespace kiln::viewers
