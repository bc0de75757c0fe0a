// The timeline: one block of lanes per run (mode · backend), stacked for comparison; lanes per host
// thread and GPU stream, nested events one row deeper. Painted directly (no item per event) with
// level of detail; wheel or +/- and W/S zoom around the cursor, drag or arrows and A/D pan, F fits.
// Clicking an event of a kernel selects that kernel and run; the selected kernel's events are
// outlined, and a kernel selected elsewhere is scrolled into view. While the session is compared
// with another, that one's runs are stacked under the session's own (B's blocks under A's, on one
// time axis, titled "A ..." and "B ..."); B's events show their tooltips but select nothing.
#pragma once

#include <QPainter>
#include <QTimer>
#include <QWidget>

#include "viewers/common/session_panel.h"
#include "viewers/selection/selection_context.h"
#include "viewers/timeline/timeline_lanes.h"

class QLabel;
class QScrollArea;

namespace kiln::viewers {

class TimelineRuler;

class TimelineCanvas : public QWidget {
  Q_OBJECT
 public:
  explicit TimelineCanvas(SelectionContext* ctx, QWidget* parent = nullptr);
  void setData(TimelineData data);
  const TimelineData& data() const { return data_; }
  TimelineGeometry& geometry() { return geometry_; }
  void fitAll();
  // The event under a point of this widget: (block, lane row, event index) or lane -1.
  struct Hit {
    int block = -1, lane = -1, event = -1, count = 0;
  };
  Hit hitAt(QPoint p) const;
  void paintMemory(QPainter& p, const TimelineLane& lane, int y) const;
  QString memoryTip(const TimelineLane& lane, int px) const;
  QPoint pointOf(int block, int lane, int event) const;  // centre of an event's bar
  // Scrolls to the first event of `kernel` (of region `compile_id` when given) in run `run` (any
  // run when -1); `at` receives the event's centre. False if there is none.
  bool revealKernel(const std::string& kernel, const std::string& compile_id, int run, QPoint* at = nullptr);
  // Marks the events of this kernel (from the selection).
  void setMarkedKernel(const std::string& kernel, const std::string& compile_id);
  static constexpr int kLabelWidth = 170, kRowHeight = 18, kBlockHeader = 20;
  int contentHeight() const;
  // The paint path (also the benchmark's): rows within [y_from, y_to) of this widget.
  void renderTo(QPainter& p, int width, int y_to, int y_from = 0);

 Q_SIGNALS:
  void viewChanged();  // zoom or pan

 protected:
  void paintEvent(QPaintEvent*) override;
  void wheelEvent(QWheelEvent*) override;
  void mousePressEvent(QMouseEvent*) override;
  void mouseMoveEvent(QMouseEvent*) override;
  void mouseReleaseEvent(QMouseEvent*) override;
  void keyPressEvent(QKeyEvent*) override;
  void resizeEvent(QResizeEvent*) override;

 private:
  int laneTop(int block, int lane) const;
  const session::Session* sessionOf(int block) const;  // the session a block's events index
  void changed();  // after zoom/pan: repaint, tell the ruler, publish the range (throttled)
  void publishRange();
  SelectionContext* ctx_;
  TimelineData data_;
  TimelineGeometry geometry_;
  EventMark mark_;
  std::vector<int> block_tops_;
  QTimer publish_;
  QPoint press_;
  bool dragging_ = false;
  bool moved_ = false;
};

class TimelinePanel : public SessionPanel {
  Q_OBJECT
 public:
  explicit TimelinePanel(SelectionContext* ctx, QWidget* parent = nullptr);
  TimelineCanvas* canvas() const { return canvas_; }
  QScrollArea* scrollArea() const { return scroll_; }

 private:
  void onSelectionChanged(const Selection& sel, unsigned parts) override;

  TimelineCanvas* canvas_ = nullptr;
  TimelineRuler* ruler_ = nullptr;
  QScrollArea* scroll_ = nullptr;
  QLabel* info_ = nullptr;
  QLabel* legend_ = nullptr;
};

}  // namespace kiln::viewers
