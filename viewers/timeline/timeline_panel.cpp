#include "viewers/timeline/timeline_panel.h"

#include <QFileInfo>
#include <QHBoxLayout>
#include <QKeyEvent>
#include <QLabel>
#include <QPainter>
#include <QPainterPath>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QToolTip>
#include <QVBoxLayout>
#include <QWheelEvent>
#include <cmath>
#include <functional>
#include <set>

#include "engine/api/report.h"
#include "viewers/timeline/timeline_ruler.h"

namespace kiln::viewers {

namespace {

QColor category_colour(const std::string& c) {
  if (c == "kernel") return QColor(66, 133, 244);
  if (c == "extern") return QColor(52, 168, 83);
  if (c == "region") return QColor(121, 134, 203);
  if (c == "guard") return QColor(230, 170, 0);
  if (c == "interpreter" || c == "fallback") return QColor(234, 67, 53);
  if (c == "iteration") return QColor(38, 166, 154);
  if (c == "cpu_op") return QColor(126, 87, 194);
  if (c == "cuda_runtime" || c == "cuda_driver") return QColor(144, 164, 174);
  if (c == "memcpy" || c == "memset") return QColor(255, 112, 67);
  if (c == "compile") return QColor(121, 85, 72);
  if (c == "sync") return QColor(216, 27, 96);
  if (c == "nvtx") return QColor(0, 150, 136);
  size_t h = std::hash<std::string>{}(c);
  return QColor::fromHsl(static_cast<int>(h % 360), 120, 140);
}

QString duration(int64_t ns) {
  if (ns >= 1000000) return QString::number(ns / 1e6, 'f', 3) + " ms";
  if (ns >= 1000) return QString::number(ns / 1e3, 'f', 2) + " us";
  return QString::number(ns) + " ns";
}

const QColor kMark(230, 81, 0);

}  // namespace

TimelineCanvas::TimelineCanvas(SelectionContext* ctx, QWidget* parent) : QWidget(parent), ctx_(ctx) {
  setMouseTracking(true);
  setFocusPolicy(Qt::StrongFocus);
  setMinimumHeight(120);
  setAttribute(Qt::WA_OpaquePaintEvent);
  publish_.setSingleShot(true);
  publish_.setInterval(100);  // the visible range goes out at most ten times a second
  connect(&publish_, &QTimer::timeout, this, &TimelineCanvas::publishRange);
}

void TimelineCanvas::setData(TimelineData data) {
  data_ = std::move(data);
  block_tops_.clear();
  int y = 0;
  for (const auto& b : data_.blocks) {
    block_tops_.push_back(y);
    y += kBlockHeader + kRowHeight * static_cast<int>(b.lanes.size());
  }
  mark_ = {};
  setMinimumHeight(contentHeight());
  fitAll();
}

int TimelineCanvas::contentHeight() const {
  int h = 0;
  for (const auto& b : data_.blocks) h += kBlockHeader + kRowHeight * static_cast<int>(b.lanes.size());
  return std::max(h, 120);
}

const session::Session* TimelineCanvas::sessionOf(int block) const {
  if (data_.blocks[block].side == 0) return ctx_->session();
  const auto& c = ctx_->current().compare;
  return c ? c->session.get() : nullptr;
}

int TimelineCanvas::laneTop(int block, int lane) const { return block_tops_[block] + kBlockHeader + kRowHeight * lane; }

void TimelineCanvas::fitAll() {
  double span = static_cast<double>(std::max<int64_t>(1, data_.end - data_.start));
  geometry_.fit(data_.start - span * 0.01, data_.end + span * 0.01, std::max(1, width() - kLabelWidth));
  changed();
}

void TimelineCanvas::resizeEvent(QResizeEvent*) { update(); }

void TimelineCanvas::changed() {
  update();
  Q_EMIT viewChanged();
  if (!publish_.isActive()) publish_.start();
}

void TimelineCanvas::setMarkedKernel(const std::string& kernel, const std::string& compile_id) {
  mark_.kernel = kernel.empty() ? -1 : data_.find(kernel);
  mark_.region = compile_id.empty() ? -1 : data_.find(compile_id);
  update();
}

void TimelineCanvas::renderTo(QPainter& p, int width, int y_to, int y_from) {
  const double area = std::max(1, width - kLabelWidth);
  p.fillRect(0, y_from, width, y_to - y_from, QColor(250, 250, 252));
  QFont f = font();
  f.setPointSizeF(std::max(6.0, f.pointSizeF() * 0.85));
  QFont bold = f;
  bold.setBold(true);
  p.setFont(f);
  const QFontMetrics fm(f);
  std::vector<QColor> colours(data_.names.size());
  std::vector<char> coloured(data_.names.size(), 0);
  const QBrush fold_hatch(QColor(255, 255, 255, 150), Qt::BDiagPattern);
  QVector<QRectF> folds, marks;
  const Selection& sel = ctx_->current();
  for (int b = 0; b < static_cast<int>(data_.blocks.size()); ++b) {
    const auto& block = data_.blocks[b];
    int top = block_tops_[b];
    if (top >= y_to) break;
    if (top + kBlockHeader + kRowHeight * static_cast<int>(block.lanes.size()) < y_from) continue;
    bool selected_run = block.side == 0 && block.run >= 0 && block.run == sel.run;
    p.fillRect(0, top, width, kBlockHeader,
               selected_run ? QColor(255, 236, 210) : block.side ? QColor(232, 224, 244) : QColor(226, 231, 239));
    p.setPen(QColor(205, 210, 220));
    p.drawLine(0, top, width, top);
    p.setPen(QColor(30, 30, 40));
    p.setFont(bold);
    p.drawText(QRect(6, top, width - 12, kBlockHeader), Qt::AlignVCenter | Qt::AlignLeft,
               QString::fromStdString(block.title) + (selected_run ? "   (selected run)" : ""));
    p.setFont(f);
    int group = -1;
    for (int l = 0; l < static_cast<int>(block.lanes.size()); ++l) {
      const auto& lane = block.lanes[l];
      group += lane.depth == 0;
      int y = laneTop(b, l);
      if (y >= y_to) break;
      if (y + kRowHeight < y_from) continue;
      if (group % 2) p.fillRect(0, y, width, kRowHeight, QColor(242, 244, 247));
      if (lane.depth == 0) {
        p.setPen(QColor(60, 60, 70));
        p.drawText(QRect(8, y, kLabelWidth - 14, kRowHeight), Qt::AlignVCenter | Qt::AlignLeft,
                   fm.elidedText(QString::fromStdString(lane.title), Qt::ElideMiddle, kLabelWidth - 14));
      }
      p.save();
      p.setClipRect(kLabelWidth, y, width - kLabelWidth, kRowHeight);
      if (lane.is_memory()) {
        paintMemory(p, lane, y);
        p.restore();
        continue;
      }
      for (const auto& item : visible_items(lane, geometry_, area, mark_)) {
        const auto& e = lane.events[item.first];
        QRectF r(kLabelWidth + item.x0, y + 2, std::max(1.0, item.x1 - item.x0), kRowHeight - 4);
        if (!coloured[e.category]) {
          colours[e.category] = category_colour(data_.names[e.category]);
          coloured[e.category] = 1;
        }
        if (item.count > 1) {  // a fold: its first event's colour, darker, hatched (below, in one call)
          p.fillRect(r, colours[e.category].darker(125));
          folds.push_back(r);
        } else {
          p.fillRect(r, colours[e.category]);
          // The label over the bar's visible part (a long span's start may be off screen).
          QRectF shown = r.intersected(QRectF(kLabelWidth, y, area, kRowHeight));
          if (shown.width() > 40) {
            p.setPen(Qt::white);
            p.drawText(shown.adjusted(3, 0, -2, 0), Qt::AlignVCenter | Qt::AlignLeft,
                       fm.elidedText(QString::fromStdString(data_.names[e.name]), Qt::ElideRight,
                                     static_cast<int>(shown.width()) - 5));
          }
        }
        if (item.marked) marks.push_back(r.adjusted(-1, -1, 1, 1));
      }
      if (!folds.isEmpty()) {
        p.setPen(Qt::NoPen);
        p.setBrush(fold_hatch);
        p.drawRects(folds);
        folds.clear();
      }
      if (!marks.isEmpty()) {
        p.setPen(QPen(kMark, 2));
        p.setBrush(Qt::NoBrush);
        p.drawRects(marks);
        marks.clear();
      }
      p.restore();
    }
  }
  p.setPen(QColor(200, 200, 210));
  p.drawLine(kLabelWidth - 1, y_from, kLabelWidth - 1, y_to);
}

// Bytes live as a filled step curve scaled to the lane's peak; the peak marked in red.
void TimelineCanvas::paintMemory(QPainter& p, const TimelineLane& lane, int y) const {
  if (lane.memory_peak <= 0 || lane.memory.empty()) return;
  const double base = y + kRowHeight - 1, h = kRowHeight - 3;
  auto x_of = [&](int64_t t) { return kLabelWidth + geometry_.x_of(static_cast<double>(t)); };
  auto y_of = [&](int64_t b) { return base - h * static_cast<double>(std::max<int64_t>(0, b)) / lane.memory_peak; };
  QPainterPath path(QPointF(x_of(lane.memory.front().first), base));
  double prev = base;
  for (const auto& [t, b] : lane.memory) {
    const double x = x_of(t);
    path.lineTo(x, prev);
    prev = y_of(b);
    path.lineTo(x, prev);
  }
  path.lineTo(x_of(lane.memory.back().first), base);
  path.closeSubpath();
  p.setRenderHint(QPainter::Antialiasing, false);
  p.setPen(QPen(QColor(124, 58, 237), 1));
  p.setBrush(QColor(196, 181, 253));
  p.drawPath(path);
  p.fillRect(QRectF(x_of(lane.memory_peak_at) - 1, y + 1, 2, kRowHeight - 2), QColor(220, 38, 38));
}

void TimelineCanvas::paintEvent(QPaintEvent* e) {
  QPainter p(this);
  renderTo(p, width(), e->rect().bottom() + 1, e->rect().top());
}

TimelineCanvas::Hit TimelineCanvas::hitAt(QPoint pt) const {
  Hit h;
  if (pt.x() < kLabelWidth) return h;
  for (int b = 0; b < static_cast<int>(data_.blocks.size()); ++b) {
    int first = laneTop(b, 0);
    int rows = static_cast<int>(data_.blocks[b].lanes.size());
    if (pt.y() < first || pt.y() >= first + rows * kRowHeight) continue;
    h.block = b;
    h.lane = (pt.y() - first) / kRowHeight;
    double x = pt.x() - kLabelWidth;
    for (const auto& item : visible_items(data_.blocks[b].lanes[h.lane], geometry_, std::max(1, width() - kLabelWidth)))
      if (x >= item.x0 - 1 && x <= item.x1 + 1) {
        h.event = item.first;
        h.count = item.count;
        break;
      }
    return h;
  }
  return h;
}

QPoint TimelineCanvas::pointOf(int block, int lane, int event) const {
  const auto& e = data_.blocks[block].lanes[lane].events[event];
  double x = geometry_.x_of(static_cast<double>(e.start) + static_cast<double>(e.dur) / 2);
  return QPoint(kLabelWidth + static_cast<int>(x), laneTop(block, lane) + kRowHeight / 2);
}

bool TimelineCanvas::revealKernel(const std::string& kernel, const std::string& compile_id, int run, QPoint* at) {
  EventMark m{kernel.empty() ? -1 : data_.find(kernel), compile_id.empty() ? -1 : data_.find(compile_id)};
  if (m.kernel < 0) return false;
  for (int b = 0; b < static_cast<int>(data_.blocks.size()); ++b) {
    if (data_.blocks[b].side != 0 || (run >= 0 && data_.blocks[b].run != run)) continue;
    // The earliest matching event over the block's lanes.
    int best_lane = -1, best_event = -1;
    for (int l = 0; l < static_cast<int>(data_.blocks[b].lanes.size()); ++l) {
      const auto& ev = data_.blocks[b].lanes[l].events;
      for (int i = 0; i < static_cast<int>(ev.size()); ++i)
        if (m.matches(ev[i])) {
          if (best_lane < 0 || ev[i].start < data_.blocks[b].lanes[best_lane].events[best_event].start) {
            best_lane = l;
            best_event = i;
          }
          break;
        }
    }
    if (best_lane < 0) continue;
    const auto& e = data_.blocks[b].lanes[best_lane].events[best_event];
    double area = std::max(1, width() - kLabelWidth);
    double centre = static_cast<double>(e.start) + static_cast<double>(e.dur) / 2;
    if (geometry_.x_of(static_cast<double>(e.start)) < 0 || geometry_.x_of(static_cast<double>(e.start + e.dur)) > area)
      geometry_.t0 = centre - area / 2 * geometry_.ns_per_px;
    changed();
    if (at) *at = pointOf(b, best_lane, best_event);
    return true;
  }
  return false;
}

void TimelineCanvas::publishRange() {
  // In the selected run's own clock (the session's ns), else relative to each run's start.
  int64_t origin = 0;
  for (const auto& b : data_.blocks)
    if (b.side == 0 && b.run >= 0 && b.run == ctx_->current().run) origin = b.origin;
  double area = std::max(1, width() - kLabelWidth);
  ctx_->setTimeRange({origin + static_cast<int64_t>(geometry_.t_of(0)), origin + static_cast<int64_t>(geometry_.t_of(area))});
}

void TimelineCanvas::wheelEvent(QWheelEvent* e) {
  if (e->angleDelta().y() == 0) return;
  double x = e->position().x() - kLabelWidth;
  geometry_.zoom_at(std::max(0.0, x), e->angleDelta().y() > 0 ? 1.25 : 0.8);
  changed();
  e->accept();
}

void TimelineCanvas::mousePressEvent(QMouseEvent* e) {
  setFocus();
  press_ = e->pos();
  dragging_ = e->button() == Qt::LeftButton;
  moved_ = false;
}

void TimelineCanvas::mouseMoveEvent(QMouseEvent* e) {
  if (dragging_ && (e->buttons() & Qt::LeftButton)) {
    int dx = e->pos().x() - press_.x();
    if (std::abs(dx) > 2 || moved_) {
      geometry_.pan_px(dx);
      press_ = e->pos();
      moved_ = true;
      changed();
    }
    return;
  }
  Hit h = hitAt(e->pos());
  const auto* s = h.block >= 0 ? sessionOf(h.block) : nullptr;
  if (h.block >= 0 && h.lane >= 0 && data_.blocks[h.block].lanes[h.lane].is_memory()) {
    QToolTip::showText(e->globalPosition().toPoint(), memoryTip(data_.blocks[h.block].lanes[h.lane], e->pos().x()), this);
    return;
  }
  if (h.event < 0) {
    QToolTip::hideText();
    return;
  }
  const auto& lane = data_.blocks[h.block].lanes[h.lane];
  const auto& pe = lane.events[h.event];
  QString tip;
  if (h.count > 1) {
    const auto& last = lane.events[h.event + h.count - 1];
    tip = QString("%1 events folded over %2 (zoom in to see them)").arg(h.count).arg(duration(last.start + last.dur - pe.start));
  } else if (s && pe.source >= 0 && pe.source < static_cast<int>(s->timeline.size())) {
    const auto& ev = s->timeline[pe.source];
    tip = QString::fromStdString(ev.name) + "\n" + QString::fromStdString(ev.category) + " · " + duration(ev.dur_ns);
    if (!ev.kernel.empty())
      tip += "\nkernel " + QString::fromStdString(ev.kernel) + (data_.blocks[h.block].side ? "" : " (click to select)");
    if (!ev.compile_id.empty()) tip += "\ncompile id " + QString::fromStdString(ev.compile_id);
  } else {
    tip = QString::fromStdString(data_.names[pe.name]) + "\n" + QString::fromStdString(data_.names[pe.category]) +
          " · " + duration(pe.dur);
  }
  QToolTip::showText(e->globalPosition().toPoint(), tip, this);
}

// Bytes live at the pointer, the lane's peak and what was live there, largest first.
QString TimelineCanvas::memoryTip(const TimelineLane& lane, int px) const {
  const double t = geometry_.t_of(px - kLabelWidth);
  int64_t now = 0;
  for (const auto& [at, b] : lane.memory) {
    if (static_cast<double>(at) > t) break;
    now = b;
  }
  QString tip = QString::fromStdString(lane.title) + "\n" + QString::fromStdString(report::bytes(now)) +
                " live here; peak " + QString::fromStdString(report::bytes(lane.memory_peak));
  if (!lane.at_peak.empty()) tip += ", live at the peak:";
  for (size_t i = 0; i < lane.at_peak.size() && i < 12; ++i)
    tip += "\n  " + QString::fromStdString(report::bytes(lane.at_peak[i].second)) + "  " +
           QString::fromStdString(lane.at_peak[i].first);
  if (lane.at_peak.size() > 12) tip += QString("\n  (%1 more)").arg(lane.at_peak.size() - 12);
  return tip;
}

void TimelineCanvas::mouseReleaseEvent(QMouseEvent* e) {
  bool was_drag = moved_;
  dragging_ = false;
  moved_ = false;
  if (was_drag || e->button() != Qt::LeftButton) return;
  Hit h = hitAt(e->pos());
  // B's runs (a comparison) are not the shown session's: nothing there to select.
  const auto* s = h.block >= 0 && data_.blocks[h.block].side == 0 ? ctx_->session() : nullptr;
  if (h.event < 0 || h.count > 1 || !s) return;
  const auto& pe = data_.blocks[h.block].lanes[h.lane].events[h.event];
  if (pe.source < 0 || pe.source >= static_cast<int>(s->timeline.size())) return;
  const auto& ev = s->timeline[pe.source];
  if (ev.run >= 0) ctx_->setRun(ev.run);
  if (!ev.kernel.empty()) ctx_->selectKernel(ev.kernel, ev.compile_id);
}

void TimelineCanvas::keyPressEvent(QKeyEvent* e) {
  double area = std::max(1, width() - kLabelWidth);
  switch (e->key()) {
    case Qt::Key_Plus: case Qt::Key_Equal: case Qt::Key_W: geometry_.zoom_at(area / 2, 1.25); break;
    case Qt::Key_Minus: case Qt::Key_S: geometry_.zoom_at(area / 2, 0.8); break;
    case Qt::Key_Left: case Qt::Key_A: geometry_.pan_px(area / 8); break;
    case Qt::Key_Right: case Qt::Key_D: geometry_.pan_px(-area / 8); break;
    case Qt::Key_F: fitAll(); return;
    default: QWidget::keyPressEvent(e); return;
  }
  changed();
}

TimelinePanel::TimelinePanel(SelectionContext* ctx, QWidget* parent) : SessionPanel(ctx, parent) {
  canvas_ = new TimelineCanvas(ctx, this);
  ruler_ = new TimelineRuler(&canvas_->geometry(), TimelineCanvas::kLabelWidth, this);
  scroll_ = new QScrollArea(this);
  scroll_->setWidget(canvas_);
  scroll_->setWidgetResizable(true);
  scroll_->setFrameShape(QFrame::NoFrame);
  scroll_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  info_ = new QLabel(this);
  legend_ = new QLabel(this);
  legend_->setTextFormat(Qt::RichText);
  auto* fit = new QPushButton("Fit", this);
  fit->setToolTip("Show the whole timeline (F)");
  auto* bar = new QHBoxLayout;
  bar->addWidget(info_, 1);
  bar->addWidget(fit);
  auto* layout = panelLayout();
  layout->setSpacing(2);
  layout->addLayout(bar);
  layout->addWidget(ruler_);
  layout->addWidget(scroll_, 1);
  layout->addWidget(legend_);
  connect(fit, &QPushButton::clicked, canvas_, &TimelineCanvas::fitAll);
  connect(canvas_, &TimelineCanvas::viewChanged, ruler_, qOverload<>(&QWidget::update));
  followSelection();
}

void TimelinePanel::onSelectionChanged(const Selection& sel, unsigned parts) {
  if (parts & (kSessionPart | kComparePart)) {
    const bool comparing = sel.session && sel.compare && sel.compare->session;
    canvas_->setData(comparing ? pack_comparison(*sel.session, *sel.compare->session,
                                                 QFileInfo(QString::fromStdString(sel.session_path)).fileName().toStdString(),
                                                 QFileInfo(QString::fromStdString(sel.compare->path)).fileName().toStdString())
                     : sel.session ? pack_timeline(*sel.session)
                                   : TimelineData{});
    const auto& d = canvas_->data();
    size_t events = 0;
    std::set<int> categories;
    for (const auto& b : d.blocks)
      for (const auto& l : b.lanes) {
        events += l.events.size();
        for (const auto& e : l.events) categories.insert(e.category);
      }
    info_->setText(sel.session && events ? QString(comparing ? "A above, B below, each run from its own start · " : "") +
                                               QString("%1 events in %2 rows, %3 blocks · wheel or W/S zoom, drag or A/D pan, F fits; "
                                                   "click a kernel to select it")
                                               .arg(events)
                                               .arg(d.lane_count())
                                               .arg(d.blocks.size())
                   : sel.session ? QString("This session has no timeline: profile a model to record one.")
                                 : QString("No timeline: open a session."));
    QString legend;
    for (int c : categories)
      legend += QString("<span style='color:%1'>&#9632;</span>&nbsp;%2&nbsp;&nbsp; ")
                    .arg(category_colour(d.names[c]).name(), QString::fromStdString(d.names[c]).toHtmlEscaped());
    if (!legend.isEmpty())
      legend += "hatched: events narrower than 3 px folded together (hover for the count)";
    legend_->setText(legend);
  }
  if (parts & (kSessionPart | kComparePart | kKernelPart | kRegionPart)) canvas_->setMarkedKernel(sel.kernel, sel.kernel.empty() ? "" : sel.compile_id);
  if ((parts & kKernelPart) && !sel.kernel.empty()) {
    QPoint at;
    if (canvas_->revealKernel(sel.kernel, sel.compile_id, sel.run, &at) ||
        canvas_->revealKernel(sel.kernel, sel.compile_id, -1, &at))
      scroll_->ensureVisible(at.x(), at.y(), 0, TimelineCanvas::kRowHeight * 2);
  }
  if (parts & (kKernelPart | kRunPart | kSessionPart)) canvas_->update();
}

}  // namespace kiln::viewers
