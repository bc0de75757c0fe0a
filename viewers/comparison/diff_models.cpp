#include "viewers/comparison/diff_models.h"

#include <QBrush>
#include <QColor>
#include <algorithm>
#include <cmath>

namespace kiln::viewers {

namespace dt = report::diff_text;

namespace {

QString q(const std::string& s) { return QString::fromStdString(s); }

// Red when B is slower, green when faster; nothing within 5 %.
QVariant change_brush(double a_ms, double b_ms) {
  const double t = time_change_tone(a_ms, b_ms);
  if (std::abs(t) < std::log2(1.05)) return {};
  return QBrush(t > 0 ? QColor(0xb0, 0x20, 0x20) : QColor(0x1a, 0x7f, 0x37));
}

double median(const std::optional<session::Run>& r) {
  return r && r->status == "ok" ? r->latency.median_ms : -1;
}

}  // namespace

RunPairModel::RunPairModel(QObject* parent)
    : RowTableModel({"Run", "A median ms", "B median ms", "B / A", "A compile cold / warm ms",
                     "B compile cold / warm ms", "A kernels/iter", "B kernels/iter", "A peak memory", "B peak memory",
                     "A status", "B status"},
                    parent) {}

void RunPairModel::setDiff(std::shared_ptr<const report::SessionDiff> d) {
  diff_ = std::move(d);
  setRows(diff_ ? diff_->runs : std::vector<report::RunPair>{});
}

QVariant RunPairModel::cell(const report::RunPair& p, int column, int role) const {
  if (role == Qt::DisplayRole) {
    const auto v = dt::run_values(p);
    switch (column) {
      case Run: return q(v.label);
      case MedianA: return q(v.median_a);
      case MedianB: return q(v.median_b);
      case Ratio: return q(v.ratio);
      case CompileA: return q(v.compile_a);
      case CompileB: return q(v.compile_b);
      case KernelsA: return q(v.kernels_a);
      case KernelsB: return q(v.kernels_b);
      case PeakA: return q(v.peak_a);
      case PeakB: return q(v.peak_b);
      case StatusA: return q(v.status_a);
      case StatusB: return q(v.status_b);
    }
  } else if (role == Qt::ForegroundRole) {
    if (column == Ratio || column == MedianB) return change_brush(median(p.a), median(p.b));
    if (column == StatusA && p.a && p.a->status != "ok") return QBrush(QColor(0x9a, 0x5b, 0x00));
    if (column == StatusB && p.b && p.b->status != "ok") return QBrush(QColor(0x9a, 0x5b, 0x00));
  } else if (role == Qt::ToolTipRole) {
    if (column == Ratio) return QString("B's median latency over A's: above 1 B is slower");
    if (column == StatusA && p.a) return q(p.a->status);
    if (column == StatusB && p.b) return q(p.b->status);
  } else if (role == Qt::TextAlignmentRole) {
    if (column != Run && column != StatusA && column != StatusB) return int(Qt::AlignRight | Qt::AlignVCenter);
  } else if (role == Qt::UserRole) {
    return p.a ? p.a->id : -1;  // A's run: the one the other panels can select
  }
  return {};
}

StructureModel::StructureModel(Kind kind, QObject* parent)
    : RowTableModel({kind == Kind::Modules ? "Module" : "Line", "Code", "A ms/iter", "B ms/iter", "B − A ms", "B / A"},
                    parent),
      kind_(kind) {}

void StructureModel::setDiff(std::shared_ptr<const report::SessionDiff> d) {
  diff_ = std::move(d);
  if (!diff_) {
    setRows({});
    return;
  }
  const auto& rows = kind_ == Kind::Modules ? diff_->structure.modules : diff_->structure.lines;
  std::vector<report::StructureLine> shown;
  for (size_t i : dt::top_rows(rows, rows.size(), kind_ == Kind::Modules)) shown.push_back(rows[i]);
  setRows(std::move(shown));
}

QVariant StructureModel::cell(const report::StructureLine& l, int column, int role) const {
  if (role == Qt::DisplayRole) {
    switch (column) {
      case Key:
        if (l.unattributed) return QString(report::kUnattributed);
        if (kind_ == Kind::Modules)
          return QString(2 * std::max(0, l.depth), ' ') + (l.key.empty() ? QString("(model)") : q(l.key));
        return q(l.key);
      case Code: return q(dt::cut(l.code, 160));
      case A: return q(dt::ms_or_dash(l.a_ms));
      case B: return q(dt::ms_or_dash(l.b_ms));
      case Delta: return q(dt::delta(l.a_ms, l.b_ms));
      case Ratio:
        return l.a_ms > 0 && l.b_ms >= 0 ? QString::number(l.b_ms / l.a_ms, 'f', 2) + "x" : QString("-");
    }
  } else if (role == Qt::ForegroundRole) {
    if (column == Delta || column == Ratio) return change_brush(l.a_ms, l.b_ms);
    if (l.unattributed) return QBrush(QColor(0x70, 0x70, 0x70));
  } else if (role == Qt::ToolTipRole) {
    if (column == Code || (column == Key && !l.code.empty())) return q(l.code);
    if (column == Key && kind_ == Kind::Modules && !l.unattributed)
      return QString("%1: its own kernels and its submodules'").arg(l.key.empty() ? QString("the model") : q(l.key));
    if (column == Key && l.unattributed)
      return QString("Kernel time that no graph node accounts for (eager kernels, unnamed replays)");
  } else if (role == Qt::TextAlignmentRole) {
    if (column >= A) return int(Qt::AlignRight | Qt::AlignVCenter);
  }
  return {};
}

}  // namespace kiln::viewers
