#include "viewers/environment/environment_model.h"

#include "engine/api/kiln.h"

namespace kiln::viewers {

namespace {

// Bounded: a session from someone else may carry a megabyte in any field.
QString shown(const std::string& s) {
  constexpr size_t kMax = 400;
  if (s.empty()) return "-";
  if (s.size() <= kMax) return QString::fromStdString(s);
  return QString::fromStdString(s.substr(0, kMax)) + QString(" … (%1 bytes)").arg(s.size());
}

}  // namespace

EnvironmentModel::EnvironmentModel(QObject* parent) : QAbstractTableModel(parent) { setSession(nullptr); }

void EnvironmentModel::setSession(std::shared_ptr<const session::Session> s) {
  beginResetModel();
  rows_.clear();
  if (s) {
    const auto& e = s->env;
    rows_ = {{"Recorded by Kiln", shown(e.kiln_version)},
             {"LibTorch", shown(e.libtorch_version)},
             {"OS", shown(e.os)},
             {"CPU", shown(e.cpu)},
             {"GPU", shown(e.gpu)},
             {"Driver", shown(e.driver)},
             {"CUDA", shown(e.cuda)},
             {"Recorded at", shown(e.created_at)},
             {"Origin", shown(s->origin)},
             {"Model", shown(s->model.path)},
             {"Model SHA-256", shown(s->model.sha256)}};
  }
  rows_.emplace_back("Shown by Kiln", QString::fromStdString(api::version_description()));
  endResetModel();
}

QString EnvironmentModel::value(const QString& fact) const {
  for (const auto& [f, v] : rows_)
    if (f == fact) return v;
  return {};
}

int EnvironmentModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int EnvironmentModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant EnvironmentModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= static_cast<int>(rows_.size())) return {};
  const auto& [fact, value] = rows_[static_cast<size_t>(index.row())];
  if (role == Qt::DisplayRole || role == Qt::ToolTipRole) return index.column() == Fact ? fact : value;
  return {};
}

QVariant EnvironmentModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
  return section == Fact ? QString("Fact") : QString("Value");
}

}  // namespace kiln::viewers
