#include "viewers/timeline/timeline_ruler.h"

#include <QPainter>
#include <cmath>

namespace kiln::viewers {

namespace {

QString tick_label(double ns, double step) {
  if (step >= 1e6) return QString::number(ns / 1e6, 'f', step >= 1e7 ? 0 : 1) + " ms";
  if (step >= 1e3) return QString::number(ns / 1e3, 'f', step >= 1e4 ? 0 : 1) + " us";
  return QString::number(ns, 'f', 0) + " ns";
}

}  // namespace

double ruler_step_ns(double ns_per_px, double min_px) {
  double want = std::max(1.0, ns_per_px * min_px);
  double base = std::pow(10.0, std::floor(std::log10(want)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (base * m >= want) return base * m;
  return base * 10;
}

void paint_ruler(QPainter& p, const TimelineGeometry& g, int label_width, int width, int height) {
  p.fillRect(0, 0, width, height, QColor(238, 240, 244));
  p.setPen(QColor(190, 194, 204));
  p.drawLine(0, height - 1, width, height - 1);
  QFont f = p.font();
  f.setPointSizeF(std::max(6.0, f.pointSizeF() * 0.85));
  p.setFont(f);
  p.setPen(QColor(90, 90, 100));
  p.drawText(QRect(6, 0, label_width - 10, height), Qt::AlignVCenter | Qt::AlignLeft, "since run start");
  const double area = std::max(1, width - label_width);
  const double step = ruler_step_ns(g.ns_per_px);
  p.save();
  p.setClipRect(label_width, 0, width - label_width, height);
  for (double t = std::floor(g.t_of(0) / step) * step; g.x_of(t) < area; t += step) {
    int x = label_width + static_cast<int>(std::lround(g.x_of(t)));
    p.setPen(QColor(120, 120, 130));
    p.drawLine(x, height - 7, x, height - 1);
    for (int minor = 1; minor < 5; ++minor) {
      int xm = label_width + static_cast<int>(std::lround(g.x_of(t + step * minor / 5)));
      p.drawLine(xm, height - 3, xm, height - 1);
    }
    if (t >= 0) {
      p.setPen(QColor(50, 50, 60));
      p.drawText(x + 3, height - 8, tick_label(t, step));
    }
  }
  p.restore();
  p.setPen(QColor(200, 200, 210));
  p.drawLine(label_width - 1, 0, label_width - 1, height);
}

TimelineRuler::TimelineRuler(const TimelineGeometry* geometry, int label_width, QWidget* parent)
    : QWidget(parent), geometry_(geometry), label_width_(label_width) {
  setFixedHeight(22);
}

void TimelineRuler::paintEvent(QPaintEvent*) {
  QPainter p(this);
  paint_ruler(p, *geometry_, label_width_, width(), height());
}

}  // namespace kiln::viewers
