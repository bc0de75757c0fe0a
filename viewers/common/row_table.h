// The table every panel uses for its lists: whole-row single selection, alternating rows, no row
// numbers, the last column stretched.
#pragma once

#include <QHeaderView>
#include <QTableView>

namespace kiln::viewers {

inline QTableView* make_row_table(QWidget* parent, const char* object_name) {
  auto* t = new QTableView(parent);
  t->setObjectName(object_name);
  t->setSelectionBehavior(QAbstractItemView::SelectRows);
  t->setSelectionMode(QAbstractItemView::SingleSelection);
  t->setAlternatingRowColors(true);
  t->setWordWrap(false);
  t->verticalHeader()->hide();
  t->horizontalHeader()->setStretchLastSection(true);
  return t;
}

}  // namespace kiln::viewers
