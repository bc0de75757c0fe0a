// The graph view: a region's graph at one stage, laid out by Graphviz off the UI thread and drawn in
// a QGraphicsScene. Nodes show op and shape, coloured by the fused kernel they went into;
// parameters (get_attr) are folded into the nodes that use them; module paths are clusters
// (collapsed by default on big graphs, double-click toggles), a collapsed module tinted by its share
// of the run's time; graph breaks are marked where the region ends; the run's time per kernel tints
// its nodes. Imported stages recorded as FX code are read into graphs. When a session opens, the
// view selects its slowest region (graph_time.h) and starts at the graph's inputs at a readable
// scale. Clicking a node selects it (its kernel follows); a kernel selected elsewhere lights up its
// nodes.
#pragma once

#include <QFutureWatcher>
#include <QGraphicsView>
#include <QThreadPool>
#include <map>
#include <set>

#include "viewers/common/session_panel.h"
#include "viewers/graph/graph_items.h"
#include "viewers/graph/graph_model.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;
class QStackedWidget;
class QGraphicsScene;
class QGraphicsRectItem;

namespace kiln::viewers {

class GraphCanvas : public QGraphicsView {
  Q_OBJECT
 public:
  using QGraphicsView::QGraphicsView;
 Q_SIGNALS:
  void boxClicked(const QString& id);
  void boxDoubleClicked(const QString& id);

 protected:
  void wheelEvent(QWheelEvent* e) override;
  void mousePressEvent(QMouseEvent* e) override;
  void mouseDoubleClickEvent(QMouseEvent* e) override;
  void keyPressEvent(QKeyEvent* e) override;
};

class GraphPanel : public SessionPanel {
  Q_OBJECT
 public:
  explicit GraphPanel(SelectionContext* ctx, QWidget* parent = nullptr);
  ~GraphPanel() override;

  // For tests and the benchmark: what is drawn now.
  const GraphModel& model() const { return model_; }
  const std::set<std::string>& collapsed() const { return collapsed_; }
  QGraphicsRectItem* boxItem(const std::string& id) const;
  std::set<std::string> highlighted() const;  // ids of boxes drawn as selected/highlighted
  std::set<std::string> externNodes() const;  // nodes drawn as extern/fallback calls
  QString detailText(const std::string& node) const;  // a node's third line (kernel, time)
  QGraphicsView* view() const;
  // Finds the next node whose name or op contains `text`, expanding its module if needed.
  void find(const QString& text);
  bool layoutPending() const { return watcher_.isRunning(); }
  void waitForLayout();
  // Shows a graph directly (no session): the benchmark's synthetic graphs.
  void showModel(GraphModel model, std::set<std::string> collapsed);
  void fit();
  // get_attr nodes folded into their users (the default); off draws them as boxes. Reloads.
  void setFoldParameters(bool fold);
  QString legendText() const;  // what the tint means now ("" when nothing is tinted)
  QString statusText() const;

 private:
  void onSelectionChanged(const Selection& sel, unsigned parts) override;
  void reload();
  void startLayout();
  void build(const GraphLayout& layout);
  void applyHighlight();
  void updateLegend(int run, bool kernels_tinted, bool modules_tinted);
  void toggle(const std::string& box);
  void search();
  void showText(const QString& text, const QString& status);
  void selectFound(const std::string& node);
  void openSlowestRegion();
  void showInputs();

  QComboBox* region_ = nullptr;
  QComboBox* stage_ = nullptr;
  QLineEdit* find_ = nullptr;
  QLabel* status_ = nullptr;
  QLabel* legend_ = nullptr;
  QStackedWidget* pages_ = nullptr;
  GraphCanvas* view_ = nullptr;
  QGraphicsScene* scene_ = nullptr;
  QPlainTextEdit* text_ = nullptr;

  GraphModel model_;
  bool fold_params_ = true;
  bool first_view_ = false;  // the next drawing is a new graph: start at its inputs
  std::map<std::string, int> members_;  // collapsed module box → its node count
  std::set<std::string> collapsed_;
  std::string dot_;  // a DOT-only stage's text (model_ is empty then)
  DrawnGraph drawn_;
  std::map<std::string, std::string> kernel_of_;  // node → kernel name (this region)
  std::string found_;    // the last search match (the same search again starts after it)
  std::string found_for_;  // the search text that found it
  std::string pending_;  // a search match to select once its module's relayout is drawn
  QPushButton* modules_ = nullptr;
  QThreadPool pool_;                              // one thread: Graphviz's owner
  QFutureWatcher<GraphLayout> watcher_;
  quint64 generation_ = 0;
};

}  // namespace kiln::viewers
