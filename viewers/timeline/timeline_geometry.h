// Time ↔ pixel for the timeline, a plain value with its own tests: the visible window starts at
// t0 (ns) and one pixel is ns_per_px; zooming keeps the time under the cursor under the cursor.
#pragma once

#include <algorithm>
#include <cstdint>

namespace kiln::viewers {

struct TimelineGeometry {
  double t0 = 0;          // ns at x = 0 of the event area
  double ns_per_px = 1e3;
  double min_ns_per_px = 0.01;

  double x_of(double t) const { return (t - t0) / ns_per_px; }
  double t_of(double x) const { return t0 + x * ns_per_px; }
  // Zooms by `factor` (> 1 zooms in) around pixel x.
  void zoom_at(double x, double factor) {
    double t = t_of(x);
    ns_per_px = std::max(min_ns_per_px, ns_per_px / factor);
    t0 = t - x * ns_per_px;
  }
  void pan_px(double dx) { t0 -= dx * ns_per_px; }
  // Shows [start, end] in `width` pixels.
  void fit(double start, double end, double width) {
    ns_per_px = std::max(min_ns_per_px, (end - start) / std::max(1.0, width));
    t0 = start;
  }
  // Keeps the window inside [start - margin, end] (margin: a tenth of the window).
  void clamp(double start, double end, double width) {
    double span = ns_per_px * width;
    double lo = start - span / 10, hi = end - span * 9 / 10;
    if (hi < lo) hi = lo;
    t0 = std::clamp(t0, lo, hi);
  }
};

}  // namespace kiln::viewers
