// The timeline picture; see svg_timeline.h.
#include "engine/report/svg_timeline.h"

#include <algorithm>
#include <functional>
#include <map>
#include <sstream>

#include "engine/report/html_text.h"
#include "engine/report/memory_view.h"
#include "engine/report/number_text.h"

namespace kiln::report {

namespace {

constexpr int kLabelWidth = 170;
constexpr int kPlotWidth = 900;
constexpr int kRowHeight = 16;
constexpr int kMaxRows = 8;  // deeper nesting is drawn in the last row
constexpr int kAxisHeight = 24;
constexpr int kLaneGap = 6;
constexpr int kMemoryHeight = 40;  // a memory lane: bytes live as a step curve

const char* category_class(const std::string& category) {
  static const std::map<std::string, const char*> known = {
      {"region", "c-region"}, {"kernel", "c-kernel"}, {"guard", "c-guard"}, {"interpreter", "c-interp"},
      {"compile", "c-compile"}, {"cpu_op", "c-cpuop"}, {"memcpy", "c-memcpy"}, {"memset", "c-memcpy"}};
  auto it = known.find(category);
  if (it != known.end()) return it->second;
  static const char* others[] = {"c-other0", "c-other1", "c-other2"};
  return others[std::hash<std::string>{}(category) % 3];
}

}  // namespace

// A span or instant as the picture needs it: numbers, names by number.
struct TimelinePicture::Item {
  int64_t start = 0, dur = 0;
  uint32_t name = 0, category = 0, compile_id = 0, kernel = 0;
  int depth = 0;
};

// Lanes in order of first appearance, each with its spans sorted and given a nesting depth.
struct TimelinePicture::Lane {
  std::string name;
  std::vector<Item> items;
  int rows = 1;
};

TimelinePicture::TimelinePicture() = default;
TimelinePicture::~TimelinePicture() = default;

void TimelinePicture::add(const session::TimelineEvent& e) {
  if (e.category == "profiler") return;  // run metadata, not time: the section says what tracing cost (trace_cost.h)
  const int64_t end = e.start_ns + std::max<int64_t>(0, e.dur_ns);
  if (!any_) t0_ = t1_ = e.start_ns;
  any_ = true;
  t0_ = std::min(t0_, e.start_ns);
  t1_ = std::max(t1_, end);
  memory_.add(e);
  if (is_memory_event(e)) return;  // drawn as a curve (memory_curve)
  auto [it, inserted] = index_.emplace(e.lane, lanes_.size());
  if (inserted) lanes_.push_back(Lane{e.lane, {}, 1});
  lanes_[it->second].items.push_back(
      Item{e.start_ns, e.dur_ns, names_.id(e.name), names_.id(e.category), names_.id(e.compile_id), names_.id(e.kernel), 0});
}

namespace {

void lay_out(std::vector<TimelinePicture::Lane>& lanes) {
  using Item = TimelinePicture::Item;
  for (auto& lane : lanes) {
    std::stable_sort(lane.items.begin(), lane.items.end(), [](const Item& a, const Item& b) {
      if (a.start != b.start) return a.start < b.start;
      return a.dur > b.dur;  // the enclosing span first
    });
    std::vector<int64_t> open_ends;
    for (auto& item : lane.items) {
      int64_t start = item.start;
      while (!open_ends.empty() && open_ends.back() <= start) open_ends.pop_back();
      item.depth = std::min<int>(static_cast<int>(open_ends.size()), kMaxRows - 1);
      lane.rows = std::max(lane.rows, item.depth + 1);
      if (item.dur > 0) open_ends.push_back(start + item.dur);
    }
  }
}

// One memory lane: bytes live as a step curve scaled to the lane's peak, the peak marked, with
// what was live there in its tooltip.
void memory_curve(std::ostringstream& os, const MemoryLane& lane, int y, int width,
                  const std::function<double(int64_t)>& x_of) {
  os << "<rect class=\"lane\" x=\"0\" y=\"" << y << "\" width=\"" << width << "\" height=\"" << kMemoryHeight
     << "\"/><text class=\"lane-label\" x=\"4\" y=\"" << y + 12 << "\">" << html_escape(lane.lane)
     << "</text><text class=\"mem-peak\" x=\"4\" y=\"" << y + 26 << "\">peak " << bytes(lane.peak_bytes) << "</text>\n";
  if (lane.peak_bytes <= 0 || lane.points.empty()) return;
  const double base = y + kMemoryHeight - 2;
  auto y_of = [&](int64_t b) { return base - (kMemoryHeight - 6) * static_cast<double>(b) / lane.peak_bytes; };
  os << "<path class=\"memory\" d=\"M" << fixed(x_of(lane.points.front().first), 2) << " " << fixed(base, 1);
  double prev_y = base;
  for (const auto& [t, b] : lane.points) {
    double x = x_of(t), yy = y_of(std::max<int64_t>(0, b));
    os << " H" << fixed(x, 2);
    if (yy != prev_y) os << " V" << fixed(yy, 1);
    prev_y = yy;
  }
  os << " H" << fixed(x_of(lane.points.back().first), 2) << " V" << fixed(base, 1) << " Z\"><title>"
     << html_escape(lane.lane) << ": bytes live over the traced iterations (peak " << bytes(lane.peak_bytes)
     << ")</title></path>\n";
  std::string live;
  for (size_t i = 0; i < lane.at_peak.size() && i < 8; ++i)
    live += "\n" + bytes(lane.at_peak[i].second) + "  " + lane.at_peak[i].first;
  if (lane.at_peak.size() > 8) live += "\n(" + std::to_string(lane.at_peak.size() - 8) + " more)";
  const double px = x_of(lane.peak_ns);
  os << "<rect class=\"peak\" x=\"" << fixed(px - 1, 2) << "\" y=\"" << y + 2 << "\" width=\"2\" height=\""
     << kMemoryHeight - 4 << "\"><title>" << html_escape("peak " + bytes(lane.peak_bytes) + (live.empty() ? "" : ", live:" + live))
     << "</title></rect>\n";
}

std::string span_title(const std::string& name, const std::string& category, int64_t dur_ns,
                       const std::string& compile_id, const std::string& kernel) {
  std::string t = name + " (" + category + ") " + duration_text(dur_ns);
  if (!compile_id.empty()) t += " " + compile_id;
  if (!kernel.empty() && kernel != name) t += " kernel " + kernel;
  return t;
}

}  // namespace

std::string duration_text(int64_t ns) {
  int64_t a = ns < 0 ? -ns : ns;
  if (a >= 1000000) return fixed(ns / 1e6, 3) + " ms";
  if (a >= 1000) return fixed(ns / 1e3, 1) + " us";
  return std::to_string(ns) + " ns";
}

std::string timeline_svg(const std::vector<session::TimelineEvent>& events, int64_t axis_ns) {
  TimelinePicture picture;
  for (const auto& e : events) picture.add(e);
  return std::move(picture).svg(axis_ns);
}

std::string TimelinePicture::svg(int64_t axis_ns) && {
  std::ostringstream os;
  if (!any_) {
    os << "<svg class=\"timeline\" width=\"400\" height=\"30\"><text x=\"10\" y=\"20\">no timeline events</text></svg>\n";
    return os.str();
  }
  int64_t t0 = t0_, t1 = t1_;
  if (t1 <= t0) t1 = t0 + 1;
  if (axis_ns > t1 - t0) t1 = t0 + axis_ns;  // a shared axis: every run drawn at the same scale
  double scale = static_cast<double>(kPlotWidth) / static_cast<double>(t1 - t0);
  auto x_of = [&](int64_t t) { return kLabelWidth + (t - t0) * scale; };

  lay_out(lanes_);
  const auto& lanes = lanes_;
  const auto memory = std::move(memory_).lanes();
  const NameTable& names = names_;
  int height = kAxisHeight;
  for (const auto& l : lanes) height += l.rows * kRowHeight + kLaneGap;
  height += static_cast<int>(memory.size()) * (kMemoryHeight + kLaneGap);
  int width = kLabelWidth + kPlotWidth + 10;
  os << "<svg class=\"timeline\" width=\"" << width << "\" height=\"" << height << "\" viewBox=\"0 0 " << width << " "
     << height << "\" role=\"img\" aria-label=\"timeline\">\n";
  // Time axis: five ticks.
  for (int i = 0; i <= 4; ++i) {
    int64_t t = t0 + (t1 - t0) * i / 4;
    double x = x_of(t);
    os << "<line class=\"tick\" x1=\"" << fixed(x, 1) << "\" y1=\"" << kAxisHeight - 6 << "\" x2=\"" << fixed(x, 1)
       << "\" y2=\"" << height << "\"/><text class=\"axis\" x=\"" << fixed(x, 1) << "\" y=\"" << kAxisHeight - 10
       << "\" text-anchor=\"" << (i == 0 ? "start" : i == 4 ? "end" : "middle") << "\">" << duration_text(t - t0)
       << "</text>\n";
  }
  int y = kAxisHeight;
  for (const auto& lane : lanes) {
    int lane_h = lane.rows * kRowHeight;
    os << "<rect class=\"lane\" x=\"0\" y=\"" << y << "\" width=\"" << width << "\" height=\"" << lane_h << "\"/>"
       << "<text class=\"lane-label\" x=\"4\" y=\"" << y + 12 << "\">" << html_escape(lane.name) << "</text>\n";
    // One pending fold per row: narrow spans that touch are merged into it.
    struct Fold {
      double x0 = 0, x1 = 0;
      int count = 0;
      int64_t total_ns = 0;
      const Item* only = nullptr;
    };
    std::vector<Fold> folds(static_cast<size_t>(lane.rows));
    auto flush = [&](int row) {
      Fold& f = folds[static_cast<size_t>(row)];
      if (f.count == 0) return;
      double ry = y + row * kRowHeight + 1;
      double w = std::max(1.0, f.x1 - f.x0);
      if (f.count == 1) {
        const Item& o = *f.only;
        os << "<rect class=\"" << category_class(names[o.category]) << "\" x=\"" << fixed(f.x0, 2) << "\" y=\"" << ry
           << "\" width=\"" << fixed(w, 2) << "\" height=\"" << kRowHeight - 2 << "\"><title>"
           << html_escape(span_title(names[o.name], names[o.category], o.dur, names[o.compile_id], names[o.kernel]))
           << "</title></rect>\n";
      } else {
        os << "<rect class=\"fold\" x=\"" << fixed(f.x0, 2) << "\" y=\"" << ry << "\" width=\"" << fixed(w, 2)
           << "\" height=\"" << kRowHeight - 2 << "\"><title>" << f.count << " spans, " << duration_text(f.total_ns)
           << " in all</title></rect>\n";
      }
      f = Fold{};
    };
    for (const auto& item : lane.items) {
      const std::string& name = names[item.name];
      const std::string& category = names[item.category];
      double x0 = x_of(item.start);
      double ry = y + item.depth * kRowHeight + 1;
      if (item.dur <= 0) {  // an instant: a tick with a tooltip
        os << "<rect class=\"instant\" x=\"" << fixed(x0 - 0.5, 2) << "\" y=\"" << ry << "\" width=\"1\" height=\""
           << kRowHeight - 2 << "\"><title>" << html_escape(name + " (" + category + ")") << "</title></rect>\n";
        continue;
      }
      double x1 = x_of(item.start + item.dur);
      Fold& f = folds[static_cast<size_t>(item.depth)];
      if (x1 - x0 < kFoldPx) {
        if (f.count > 0 && x0 > f.x1 + 1.0) flush(item.depth);
        if (f.count == 0) f.x0 = x0;
        f.x1 = std::max(f.x1, x1);
        f.count += 1;
        f.total_ns += item.dur;
        f.only = &item;
        continue;
      }
      flush(item.depth);
      double w = x1 - x0;
      os << "<rect class=\"" << category_class(category) << "\" x=\"" << fixed(x0, 2) << "\" y=\"" << ry
         << "\" width=\"" << fixed(w, 2) << "\" height=\"" << kRowHeight - 2 << "\"><title>"
         << html_escape(span_title(name, category, item.dur, names[item.compile_id], names[item.kernel]))
         << "</title></rect>";
      if (w > 40) {
        size_t chars = static_cast<size_t>((w - 6) / 6.5);
        std::string label = name;
        if (label.size() > chars) {
          size_t cut = chars > 1 ? chars - 1 : 0;
          while (cut > 0 && (static_cast<unsigned char>(label[cut]) & 0xC0) == 0x80) --cut;  // whole UTF-8 characters
          label = label.substr(0, cut) + "…";
        }
        os << "<text class=\"span-label\" x=\"" << fixed(x0 + 3, 2) << "\" y=\"" << ry + 11 << "\">"
           << html_escape(label) << "</text>";
      }
      os << "\n";
    }
    for (int row = 0; row < lane.rows; ++row) flush(row);
    y += lane_h + kLaneGap;
  }
  for (const auto& lane : memory) {
    memory_curve(os, lane, y, width, x_of);
    y += kMemoryHeight + kLaneGap;
  }
  os << "</svg>\n";
  return os.str();
}

}  // namespace kiln::report
