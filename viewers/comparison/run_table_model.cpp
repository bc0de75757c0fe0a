#include "viewers/comparison/run_table_model.h"

#include <QBrush>
#include <QColor>

namespace kiln::viewers {

namespace {
QString ms(double v) { return v > 0 ? QString::number(v, 'f', v < 1 ? 4 : 2) : QString("–"); }
QString bytes(int64_t b) {
  if (b <= 0) return "–";
  if (b >= int64_t(1) << 30) return QString::number(double(b) / double(int64_t(1) << 30), 'f', 2) + " GiB";
  if (b >= int64_t(1) << 20) return QString::number(double(b) / double(1 << 20), 'f', 1) + " MiB";
  return QString::number(double(b) / 1024.0, 'f', 1) + " KiB";
}
}  // namespace

RunTableModel::RunTableModel(QObject* parent)
    : ColumnTableModel({"Mode", "Backend", "Device", "Status", "Compile cold ms", "Compile warm ms", "First call ms",
                        "Median ms", "P10 ms", "P90 ms", "Kernels/iter", "GPU busy", "Host overhead ms", "Peak memory",
                        "Speedup", "Max error"},
                       parent) {}

void RunTableModel::setSession(std::shared_ptr<const session::Session> s) {
  beginResetModel();
  session_ = std::move(s);
  endResetModel();
}

const session::Run* RunTableModel::run(int row) const {
  if (!session_ || row < 0 || row >= int(session_->runs.size())) return nullptr;
  return &session_->runs[size_t(row)];
}

int RunTableModel::rowOfRun(int run_id) const {
  if (!session_) return -1;
  for (size_t i = 0; i < session_->runs.size(); ++i)
    if (session_->runs[i].id == run_id) return int(i);
  return -1;
}

int RunTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() || !session_ ? 0 : int(session_->runs.size());
}

QVariant RunTableModel::data(const QModelIndex& index, int role) const {
  const auto* r = index.isValid() ? run(index.row()) : nullptr;
  if (!r) return {};
  const bool ok = r->status == "ok";
  if (role == Qt::DisplayRole) {
    if (!ok && index.column() > Status) return QString();
    switch (index.column()) {
      case Mode: return QString::fromStdString(r->mode);
      case Backend: return QString::fromStdString(r->backend);
      case Device: return QString::fromStdString(r->device);
      case Status: return QString::fromStdString(r->status);
      case CompileCold: return ms(r->compile_cold_ms);
      case CompileWarm: return ms(r->compile_warm_ms);
      case FirstCall: return ms(r->first_call_ms);
      case Median: return ms(r->latency.median_ms);
      case P10: return ms(r->latency.p10_ms);
      case P90: return ms(r->latency.p90_ms);
      case KernelsPerIter: return QString::number(r->kernels_per_iter, 'f', 1);
      case GpuBusy: return r->gpu_busy > 0 ? QString::number(r->gpu_busy * 100, 'f', 0) + " %" : QString("–");
      case HostOverhead: return ms(r->host_overhead_ms);
      case PeakMemory: return bytes(r->peak_memory_bytes);
      case Speedup: return r->speedup_vs_eager > 0 ? QString::number(r->speedup_vs_eager, 'f', 2) + "x" : QString("–");
      case MaxError: return r->mode == "eager" ? QString("–") : QString::number(r->max_rel_error, 'e', 1);
    }
  } else if (role == Qt::ToolTipRole) {
    if (index.column() == Status) return QString::fromStdString(r->status);
    if (index.column() == MaxError)
      return QString("max abs %1, max rel %2").arg(r->max_abs_error, 0, 'e', 2).arg(r->max_rel_error, 0, 'e', 2);
    if (index.column() == Median) return QString("%1 iterations").arg(r->latency.iterations);
  } else if (role == Qt::ForegroundRole) {
    if (index.column() == Status && !ok) return QBrush(QColor(0x9a, 0x5b, 0x00));
    if (index.column() == Speedup && ok && r->speedup_vs_eager > 0 && r->mode != "eager")
      return QBrush(r->speedup_vs_eager >= 1 ? QColor(0x1a, 0x7f, 0x37) : QColor(0xb0, 0x20, 0x20));
    if (index.column() == MaxError && r->max_rel_error > 1e-3) return QBrush(QColor(0xb0, 0x20, 0x20));
  } else if (role == Qt::TextAlignmentRole) {
    if (index.column() > Status) return int(Qt::AlignRight | Qt::AlignVCenter);
  } else if (role == Qt::UserRole) {
    return r->id;
  }
  return {};
}

}  // namespace kiln::viewers
