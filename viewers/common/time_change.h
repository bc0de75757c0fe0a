// How much B's time differs from A's, as the comparison's tables and the graph view colour it.
#pragma once

#include <algorithm>
#include <cmath>

namespace kiln::viewers {

// B's time against A's as a tone in [-1, 1]: log2(b / a) clamped, so ±1 is twice as slow / fast
// (positive: B is slower). 0 when either side has no time.
inline double time_change_tone(double a_ms, double b_ms) {
  if (a_ms <= 0 || b_ms <= 0) return 0;
  return std::clamp(std::log2(b_ms / a_ms), -1.0, 1.0);
}

}  // namespace kiln::viewers
