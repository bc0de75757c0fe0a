// SessionPanel: what the panels share. Each follows one SelectionContext (viewers/selection): it
// shows the selection when built and on every change (onSelectionChanged), writes the user's picks
// back to it, and raises syncing_ while it moves its own views to follow the selection, so that
// their signals do not write back. The panel's outer layout and the captioned boxes of its parts
// are built here too.
#pragma once

#include <QAbstractItemView>
#include <QItemSelectionModel>
#include <QWidget>

#include "viewers/selection/selection_context.h"

class QVBoxLayout;

namespace kiln::viewers {

class SessionPanel : public QWidget {
  Q_OBJECT
 protected:
  explicit SessionPanel(SelectionContext* ctx, QWidget* parent = nullptr);

  // Shows a change of the selection; `parts` are the SelectionPart bits that changed.
  virtual void onSelectionChanged(const Selection& sel, unsigned parts) = 0;
  // Shows the current selection as if `parts` had changed, then every change. Called last in a
  // panel's constructor: from SessionPanel's constructor the virtual call would not reach the panel.
  void followSelection(unsigned parts = kSessionPart);
  // The panel's outer layout, 2 px margins; the panel adds its parts.
  QVBoxLayout* panelLayout();
  // Calls `picked(row)` when the current row of `view` changes, unless the panel moved it (syncing_).
  template <typename F>
  void onRowPicked(QAbstractItemView* view, F picked) {
    connect(view->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
            [this, picked](const QModelIndex& current) {
              if (!syncing_) picked(current.row());
            });
  }

  SelectionContext* ctx_;
  bool syncing_ = false;
};

// A box of `top` above `main`, which takes the spare height; no margins.
QWidget* stacked_box(QWidget* parent, QWidget* top, QWidget* main);
// A box of a bold caption above `main`.
QWidget* titled_box(QWidget* parent, const QString& title, QWidget* main);

}  // namespace kiln::viewers
