#include "viewers/breaks/break_table_model.h"

#include <QFont>
#include <QStringList>
#include <filesystem>

namespace kiln::viewers {

std::string break_compile_id(const session::Session& s, const session::GraphBreakRecord& b) {
  if (!b.compile_id.empty()) return b.compile_id;
  for (int region : {b.info.ends_region, b.info.resumes_region}) {
    if (region < 0) continue;
    for (const auto& r : s.regions)
      if (r.region == region) return r.compile_id;
  }
  return "";
}

namespace {
QString first_line(const std::string& s) {
  return QString::fromStdString(s.substr(0, s.find('\n')));
}
QString location(const session::GraphBreakRecord& b) {
  const auto& loc = b.info.loc;
  if (!loc.known()) return "(no line)";
  return QString::fromStdString(std::filesystem::path(loc.file).filename().string()) + ":" +
         QString::number(loc.line);
}
}  // namespace

BreakTableModel::BreakTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void BreakTableModel::setSession(std::shared_ptr<const session::Session> s) {
  beginResetModel();
  session_ = std::move(s);
  groups_ = session_ ? report::group_breaks(session_->breaks) : std::vector<report::BreakGroup>{};
  endResetModel();
}

const report::BreakGroup* BreakTableModel::group(int row) const {
  return row >= 0 && row < int(groups_.size()) ? &groups_[size_t(row)] : nullptr;
}

const session::GraphBreakRecord* BreakTableModel::record(int row) const {
  const auto* g = group(row);
  return g ? g->first : nullptr;
}

int BreakTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : int(groups_.size());
}

int BreakTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant BreakTableModel::data(const QModelIndex& index, int role) const {
  const auto* g = index.isValid() ? group(index.row()) : nullptr;
  if (!g || !g->first) return {};
  const auto& b = *g->first;
  if (role == Qt::DisplayRole) {
    switch (index.column()) {
      case Id: return QString::fromStdString(b.info.id);
      case Category: return QString::fromUtf8(capture::break_category_info(b.info.category).name);
      case Reason: return first_line(b.info.reason);
      case Hint: return first_line(b.info.hint);
      case Hits: return g->hits;
      case Sites: return g->sites;
      case Module: return QString::fromStdString(b.info.module_path);
      case Location: return location(b);
      case CompileIds: {
        QStringList ids;
        for (const auto& id : g->compile_ids) ids << QString::fromStdString(id);
        if (ids.isEmpty() && session_) ids << QString::fromStdString(break_compile_id(*session_, b));
        return ids.join(' ');
      }
    }
  } else if (role == Qt::ToolTipRole) {
    switch (index.column()) {
      case Reason: return QString::fromStdString(b.info.reason);
      case Hint: return QString::fromStdString(b.info.hint);
      case Location: return QString::fromStdString(b.info.loc.file + ":" + std::to_string(b.info.loc.line) +
                                                   (b.info.loc.text.empty() ? "" : "\n" + b.info.loc.text));
      case Id: return QString::fromStdString(b.info.op);
      default: return {};
    }
  } else if (role == Qt::TextAlignmentRole) {
    if (index.column() == Hits || index.column() == Sites) return int(Qt::AlignRight | Qt::AlignVCenter);
  }
  return {};
}

QVariant BreakTableModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return QAbstractTableModel::headerData(section, o, role);
  static const char* names[] = {"Id", "Line", "Reason", "Hint", "Hits", "Sites", "Category", "Module", "Compile ids"};
  return section >= 0 && section < ColumnCount ? QString(names[section]) : QVariant();
}

}  // namespace kiln::viewers
