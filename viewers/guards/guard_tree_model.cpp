#include "viewers/guards/guard_tree_model.h"

#include <QFont>
#include <algorithm>
#include <map>
#include <utility>

namespace kiln::viewers {

int region_of_compile_id(const std::string& compile_id) {
  if (compile_id.size() < 4 || compile_id.front() != '[') return -1;
  size_t slash = compile_id.find('/');
  if (slash == std::string::npos || slash == 1) return -1;
  int r = 0;
  for (size_t i = 1; i < slash; ++i) {
    if (compile_id[i] < '0' || compile_id[i] > '9') return -1;
    r = r * 10 + (compile_id[i] - '0');
    if (r > 1000000) return -1;
  }
  return r;
}

namespace {
// "forward at /home/u/models.py:40" → "forward at models.py:40".
std::string short_frame(const std::string& frame) {
  size_t at = frame.rfind(" at ");
  if (at == std::string::npos) return frame;
  std::string path = frame.substr(at + 4);
  size_t slash = path.rfind('/');
  return frame.substr(0, at + 4) + (slash == std::string::npos ? path : path.substr(slash + 1));
}
}  // namespace

GuardTreeModel::GuardTreeModel(QObject* parent) : QAbstractItemModel(parent) {}

int GuardTreeModel::add(int parent, Item item) {
  item.parent = parent;
  const int id = int(items_.size());
  auto& siblings = parent < 0 ? top_ : items_[size_t(parent)].children;
  item.row = int(siblings.size());
  siblings.push_back(id);
  items_.push_back(std::move(item));
  return id;
}

void GuardTreeModel::setSession(std::shared_ptr<const session::Session> s) {
  beginResetModel();
  session_ = std::move(s);
  items_.clear();
  top_.clear();
  if (session_) {
    // Imports carry no cache-hit counts: leave the column empty rather than show zeros.
    const bool hits_known = session_->origin.find("import") == std::string::npos;
    std::map<int, int> region_item;  // region number → item
    for (const auto& r : session_->regions) {
      int region = r.region >= 0 ? r.region : region_of_compile_id(r.compile_id);
      auto it = region_item.find(region);
      if (it == region_item.end()) {
        Item ri;
        ri.kind = "region";
        ri.name = region >= 0 ? QString("region %1").arg(region) : QString("other");
        if (!r.frame.empty()) ri.name += "  " + QString::fromStdString(short_frame(r.frame));
        ri.hits = hits_known ? 0 : -1;
        it = region_item.emplace(region, add(-1, std::move(ri))).first;
      }
      Item e;
      e.kind = "entry";
      e.name = QString::fromStdString(r.compile_id);
      e.compile_id = r.compile_id;
      e.hits = hits_known ? r.hits : -1;
      e.compile_ms = r.compile_ms;
      e.reason = QString::fromStdString(r.recompile_reason);
      if (hits_known) items_[size_t(it->second)].hits += r.hits;
      int entry = add(it->second, std::move(e));
      // Under the entry its guards, then its symbols.
      const std::pair<QString, const std::vector<std::string>*> leaves[] = {{"guard", &r.guards},
                                                                            {"symbol", &r.symbols}};
      for (const auto& [kind, texts] : leaves)
        for (const auto& text : *texts) {
          Item leaf;
          leaf.kind = kind;
          leaf.name = QString::fromStdString(text);
          leaf.compile_id = r.compile_id;
          add(entry, std::move(leaf));
        }
    }
  }
  endResetModel();
}

std::string GuardTreeModel::compileId(const QModelIndex& index) const {
  if (!index.isValid()) return "";
  return items_[size_t(index.internalId())].compile_id;
}

QModelIndex GuardTreeModel::entryIndex(const std::string& compile_id) const {
  for (size_t i = 0; i < items_.size(); ++i)
    if (items_[i].kind == "entry" && items_[i].compile_id == compile_id)
      return createIndex(items_[i].row, 0, quintptr(i));
  return {};
}

QModelIndex GuardTreeModel::index(int row, int column, const QModelIndex& parent) const {
  if (row < 0 || column < 0 || column >= ColumnCount) return {};
  if (parent.isValid() && parent.column() != 0) return {};
  const auto& siblings = parent.isValid() ? items_[size_t(parent.internalId())].children : top_;
  if (row >= int(siblings.size())) return {};
  return createIndex(row, column, quintptr(siblings[size_t(row)]));
}

QModelIndex GuardTreeModel::parent(const QModelIndex& child) const {
  if (!child.isValid()) return {};
  int p = items_[size_t(child.internalId())].parent;
  if (p < 0) return {};
  return createIndex(items_[size_t(p)].row, 0, quintptr(p));
}

int GuardTreeModel::rowCount(const QModelIndex& parent) const {
  if (!parent.isValid()) return int(top_.size());
  if (parent.column() != 0) return 0;
  return int(items_[size_t(parent.internalId())].children.size());
}

int GuardTreeModel::columnCount(const QModelIndex&) const { return ColumnCount; }

QVariant GuardTreeModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid()) return {};
  const auto& it = items_[size_t(index.internalId())];
  if (role == Qt::DisplayRole) {
    switch (index.column()) {
      case Name: return it.name;
      case Kind:
        if (it.kind == "entry") return QString("entry (%1 guards)").arg(
                                           std::count_if(it.children.begin(), it.children.end(),
                                                         [this](int c) { return items_[size_t(c)].kind == "guard"; }));
        if (it.kind == "region") return QString("region (%1 entries)").arg(it.children.size());
        return it.kind;
      case Hits: return it.hits >= 0 ? QVariant(it.hits) : QVariant();
      case CompileMs: return it.compile_ms >= 0 ? QVariant(QString::number(it.compile_ms, 'f', 2)) : QVariant();
      case Reason: return it.reason.section('\n', 0, 0);
    }
  } else if (role == Qt::ToolTipRole) {
    if (index.column() == Reason && !it.reason.isEmpty()) return it.reason;
    if (index.column() == Name) return it.name;
  } else if (role == Qt::FontRole) {
    if (it.kind == "region" || it.kind == "entry") {
      QFont f;
      f.setBold(it.kind == "region");
      return f;
    }
    if (it.kind == "symbol") {
      QFont f;
      f.setItalic(true);
      return f;
    }
  } else if (role == Qt::TextAlignmentRole) {
    if (index.column() == Hits || index.column() == CompileMs) return int(Qt::AlignRight | Qt::AlignVCenter);
  }
  return {};
}

QVariant GuardTreeModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return QAbstractItemModel::headerData(section, o, role);
  static const char* names[] = {"Region / entry / guard", "Kind", "Hits", "Compile ms", "Recompile reason"};
  return section >= 0 && section < ColumnCount ? QString(names[section]) : QVariant();
}

}  // namespace kiln::viewers
