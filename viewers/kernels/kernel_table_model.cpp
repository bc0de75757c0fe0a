#include "viewers/kernels/kernel_table_model.h"

#include <cmath>

namespace kiln::viewers {

namespace {

const QString kNone = QStringLiteral("–");

// The rows of kernel_stats() that launcher_time() adds up for k; every other row is a kernel no
// session kernel launched and gets a row of its own, so each device record is in exactly one row.
bool launched_by_kernel(const report::KernelStat& r, const session::Kernel& k) {
  return r.launched_by == k.name && (r.compile_id.empty() || k.compile_id.empty() || r.compile_id == k.compile_id);
}

QString launches_text(double per_iter) { return QString::number(per_iter, 'f', 1); }

}  // namespace

QString short_kernel_name(const std::string& name) {
  std::string n = name.rfind("void ", 0) == 0 ? name.substr(5) : name;
  if (n.size() > 90) {
    const size_t cut = n.find_first_of("<(");
    if (cut != std::string::npos && cut > 0 && cut <= 80) n = n.substr(0, cut) + (n[cut] == '<' ? "<…>" : "(…)");
    else n = n.substr(0, 80) + "…";
  }
  return QString::fromStdString(n);
}

bool ran_session_kernels(const report::KernelStats& stats, const session::Session& s) {
  for (const auto& r : stats.kernels)
    for (const auto& k : s.kernels)
      if (launched_by_kernel(r, k)) return true;
  return false;
}

std::string launched_by_text(const report::KernelStat& k) {
  if (k.launched_by.empty()) return k.launcher == "CUDA graph replay" ? "CUDA graph replay" : "launcher unknown";
  // On the CPU an extern call's own span is the row: it launched nothing, it ran.
  if (k.launched_by == k.name && k.launcher == "extern") return "extern call";
  return "launched by " + k.launched_by;
}

KernelTableModel::KernelTableModel(QObject* parent)
    : ColumnTableModel({"Kernel", "Language", "Region", "Launches/iter", "", "Share", "Registers", "Shared B",
                        "Launch config"},
                       parent) {}

std::vector<size_t> KernelTableModel::computeStats() {
  stats_ = session_ ? report::kernel_stats(*session_, run_) : report::KernelStats{};
  launcherTimes_.clear();
  std::vector<size_t> others;
  if (!session_) return others;
  for (const auto& k : session_->kernels) launcherTimes_.push_back(report::launcher_time(stats_, k));
  for (size_t i = 0; i < stats_.kernels.size(); ++i) {
    bool own = false;
    for (const auto& k : session_->kernels) own = own || launched_by_kernel(stats_.kernels[i], k);
    if (!own) others.push_back(i);  // stats_.kernels is sorted by time already
  }
  return others;
}

void KernelTableModel::setSession(std::shared_ptr<const session::Session> s, int run) {
  beginResetModel();
  session_ = std::move(s);
  run_ = run;
  others_ = computeStats();
  endResetModel();
}

void KernelTableModel::setRun(int run) {
  run_ = run;
  if (!session_) return;
  const int n = sessionRows();
  if (!others_.empty()) {
    beginRemoveRows({}, n, n + int(others_.size()) - 1);
    others_.clear();
    endRemoveRows();
  }
  std::vector<size_t> others = computeStats();
  if (!others.empty()) {
    beginInsertRows({}, n, n + int(others.size()) - 1);
    others_ = std::move(others);
    endInsertRows();
  }
  if (n > 0) Q_EMIT dataChanged(index(0, Launches), index(n - 1, Share));
  Q_EMIT headerDataChanged(Qt::Horizontal, TimeMs, TimeMs);  // GPU or CPU time
}

const session::Kernel* KernelTableModel::kernel(int row) const {
  if (!session_ || row < 0 || row >= sessionRows()) return nullptr;
  return &session_->kernels[size_t(row)];
}

const report::KernelStat* KernelTableModel::deviceKernel(int row) const {
  const int i = row - sessionRows();
  if (!session_ || i < 0 || i >= int(others_.size())) return nullptr;
  return &stats_.kernels[others_[size_t(i)]];
}

int KernelTableModel::rowOf(const std::string& name, const std::string& compile_id) const {
  if (!session_) return -1;
  for (size_t i = 0; i < session_->kernels.size(); ++i)
    if (session_->kernels[i].name == name && (compile_id.empty() || session_->kernels[i].compile_id == compile_id))
      return int(i);
  return -1;
}

int KernelTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() || !session_ ? 0 : sessionRows() + int(others_.size());
}

QVariant KernelTableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid()) return {};
  const auto* k = kernel(index.row());
  const auto* d = k ? nullptr : deviceKernel(index.row());
  if (!k && !d) return {};
  // Time of a session kernel: everything it launched on the device (on the CPU: its own spans);
  // a kernel that did not run in this run has no launches and shows none.
  int64_t total_ns = 0;
  double launches = 0, share = 0;
  bool ran = false;
  if (k) {
    const auto& lt = launcherTimes_[size_t(index.row())];
    total_ns = lt.total_ns;
    launches = lt.launches_per_iter;
    share = lt.share;
    ran = lt.launches_per_iter > 0;
  } else {
    total_ns = d->total_ns;
    launches = d->launches_per_iter;
    share = d->share;
    ran = true;
  }
  const double ms_per_iter = double(total_ns) / stats_.iterations / 1e6;
  if (role == Qt::DisplayRole) {
    switch (index.column()) {
      case Launches: return ran ? QVariant(launches_text(launches)) : QVariant(kNone);
      case TimeMs: return ran ? QVariant(QString::number(ms_per_iter, 'f', 4)) : QVariant(kNone);
      case Share: return ran ? QVariant(QString::number(share * 100, 'f', 1) + " %") : QVariant(kNone);
    }
    if (d) {
      switch (index.column()) {
        case Name: return short_kernel_name(d->name);
        case Language: return stats_.time_source == "host" ? QString("host") : QString("device");
        case Region: return QString::fromStdString(d->compile_id);
        case Launch: return QString::fromStdString(launched_by_text(*d));
        case Registers:
        case Shared: return kNone;
      }
      return {};
    }
    switch (index.column()) {
      case Name: return QString::fromStdString(k->name);
      case Language: return QString::fromStdString(k->language);
      case Region: return QString::fromStdString(k->compile_id);
      case Launch: return QString::fromStdString(k->launch_config);
      case Registers: return k->registers > 0 ? QVariant(k->registers) : QVariant(kNone);
      case Shared: return k->shared_bytes > 0 ? QVariant(k->shared_bytes) : QVariant(kNone);
    }
  } else if (role == Qt::ToolTipRole) {
    if (index.column() == Launches && ran)
      return QString("%1 launches in %2 traced iteration(s)")
          .arg(std::llround(launches * stats_.iterations))
          .arg(stats_.iterations);
    if (d) {
      QString by = QString::fromStdString(launched_by_text(*d));
      if (!d->launcher.empty() && !d->launched_by.empty()) by += " (" + QString::fromStdString(d->launcher) + ")";
      if (index.column() == Name) return QString::fromStdString(d->name) + "\n" + by;
      if (index.column() == Launch) return by;
      return {};
    }
    if (index.column() == Launch) return QString::fromStdString(k->launch_config);
    if (index.column() == Name)
      return QString::fromStdString(k->name) + QString("\n%1 graph node(s)").arg(k->nodes.size());
  } else if (role == Qt::TextAlignmentRole) {
    if (index.column() >= Launches && index.column() <= Shared) return int(Qt::AlignRight | Qt::AlignVCenter);
  } else if (role == Qt::UserRole && index.column() == Share) {
    return ran ? share : 0.0;
  }
  return {};
}

QVariant KernelTableModel::headerData(int section, Qt::Orientation o, int role) const {
  if (section == TimeMs && o == Qt::Horizontal && role == Qt::DisplayRole)
    return stats_.time_source == "host" ? QString("CPU ms/iter") : QString("GPU ms/iter");
  return ColumnTableModel::headerData(section, o, role);
}

}  // namespace kiln::viewers
