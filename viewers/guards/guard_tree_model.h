// GuardTreeModel: compiled regions → their cache entries "[r/0]", "[r/1]", … → each entry's guards
// and symbols, with hits, compile time and the recompile reason of every entry. A thin adapter
// over an immutable session (regions group by CompiledRegion::region, or by the frame number of
// the compile id when the session has no region numbers).
#pragma once

#include <QAbstractItemModel>
#include <memory>
#include <string>
#include <vector>

#include "engine/api/session.h"

namespace kiln::viewers {

// The region number of a compile id "[3/1]" → 3 (also "[3/1_1]"); -1 when it is not of that form.
int region_of_compile_id(const std::string& compile_id);

class GuardTreeModel : public QAbstractItemModel {
  Q_OBJECT
 public:
  enum Column { Name, Kind, Hits, CompileMs, Reason, ColumnCount };

  explicit GuardTreeModel(QObject* parent = nullptr);
  void setSession(std::shared_ptr<const session::Session> s);

  // The compile id of an entry row or of any guard/symbol under it ("" for region rows).
  std::string compileId(const QModelIndex& index) const;
  // The entry row of a compile id (invalid when absent).
  QModelIndex entryIndex(const std::string& compile_id) const;

  QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
  QModelIndex parent(const QModelIndex& child) const override;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

 private:
  struct Item {
    int parent = -1;  // index into items_, -1 for top level
    int row = 0;      // row under its parent
    std::vector<int> children;
    QString name, kind, reason;
    qint64 hits = -1;
    double compile_ms = -1;
    std::string compile_id;
  };
  int add(int parent, Item item);

  std::shared_ptr<const session::Session> session_;
  std::vector<Item> items_;
  std::vector<int> top_;
};

}  // namespace kiln::viewers
