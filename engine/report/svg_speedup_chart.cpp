// The speedup bar chart; see svg_speedup_chart.h.
#include "engine/report/svg_speedup_chart.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "engine/report/html_text.h"
#include "engine/report/number_text.h"

namespace kiln::report {

namespace {

constexpr int kLabelWidth = 220;
constexpr int kPlotWidth = 420;
constexpr int kRowHeight = 26;
constexpr int kTop = 10;

double speedup_of(const session::Run& r) {
  if (std::isfinite(r.speedup_vs_eager) && r.speedup_vs_eager > 0) return r.speedup_vs_eager;
  return r.mode == "eager" ? 1.0 : 0.0;
}

}  // namespace

std::string speedup_chart_svg(const std::vector<session::Run>& runs) {
  double top = 1.0;
  for (const auto& r : runs)
    if (r.status == "ok") top = std::max(top, speedup_of(r));
  top *= 1.15;
  int height = kTop * 2 + std::max<int>(1, static_cast<int>(runs.size())) * kRowHeight + 20;
  int width = kLabelWidth + kPlotWidth + 80;
  std::ostringstream os;
  os << "<svg class=\"chart\" width=\"" << width << "\" height=\"" << height
     << "\" viewBox=\"0 0 " << width << " " << height << "\" role=\"img\" aria-label=\"speedup over eager\">\n";
  if (runs.empty()) {
    os << "<text x=\"10\" y=\"30\">no runs recorded</text>\n</svg>\n";
    return os.str();
  }
  auto x_of = [&](double v) { return kLabelWidth + v / top * kPlotWidth; };
  int y = kTop;
  for (const auto& r : runs) {
    std::string label = r.mode + (r.backend.empty() ? "" : " · " + r.backend) + (r.device.empty() ? "" : " · " + r.device);
    os << "<text x=\"" << kLabelWidth - 8 << "\" y=\"" << y + 17 << "\" text-anchor=\"end\">" << html_escape(label)
       << "</text>\n";
    double v = speedup_of(r);
    if (r.status != "ok" || v <= 0) {
      std::string note = r.status == "ok" ? "no speedup recorded" : r.status;
      os << "<text x=\"" << kLabelWidth + 4 << "\" y=\"" << y + 17 << "\" class=\"muted\">" << html_escape(note)
         << "</text>\n";
    } else {
      double w = x_of(v) - kLabelWidth;
      const char* cls = v >= 1.0 ? "bar-faster" : "bar-slower";
      os << "<rect class=\"" << cls << "\" x=\"" << kLabelWidth << "\" y=\"" << y + 4 << "\" width=\"" << fixed(w, 1)
         << "\" height=\"" << kRowHeight - 8 << "\"><title>" << html_escape(label) << ": " << speedup(v)
         << "</title></rect>\n";
      os << "<text x=\"" << fixed(kLabelWidth + w + 6, 1) << "\" y=\"" << y + 17 << "\">" << speedup(v) << "</text>\n";
    }
    y += kRowHeight;
  }
  double one = x_of(1.0);
  os << "<line x1=\"" << fixed(one, 1) << "\" y1=\"" << kTop - 4 << "\" x2=\"" << fixed(one, 1) << "\" y2=\"" << y + 2
     << "\" class=\"ref\" stroke-dasharray=\"4 3\"/>\n";
  os << "<text x=\"" << fixed(one, 1) << "\" y=\"" << y + 16 << "\" text-anchor=\"middle\" class=\"muted\">1.0x (eager)</text>\n";
  os << "</svg>\n";
  return os.str();
}

}  // namespace kiln::report
