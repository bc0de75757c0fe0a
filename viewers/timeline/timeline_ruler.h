// The time ruler above the timeline's lanes: ticks at a round step (1, 2 or 5 × 10^k ns) chosen so
// labels stay about 100 px apart, labelled relative to each run's start. It stays in place while
// the lanes scroll vertically; it follows the canvas's geometry.
#pragma once

#include <QWidget>

#include "viewers/timeline/timeline_geometry.h"

namespace kiln::viewers {

// The tick step in ns for a scale: the smallest 1/2/5 × 10^k at least `min_px` pixels wide.
double ruler_step_ns(double ns_per_px, double min_px = 100);

// Paints ticks and labels for the window of `g` into [label_width, width) × [0, height).
void paint_ruler(QPainter& p, const TimelineGeometry& g, int label_width, int width, int height);

class TimelineRuler : public QWidget {
  Q_OBJECT
 public:
  TimelineRuler(const TimelineGeometry* geometry, int label_width, QWidget* parent = nullptr);
  QSize sizeHint() const override { return {400, 22}; }

 protected:
  void paintEvent(QPaintEvent*) override;

 private:
  const TimelineGeometry* geometry_;
  int label_width_;
};

}  // namespace kiln::viewers
