#include "viewers/timeline/timeline_panel.h"

#include <QKeyEvent>
#include <QLabel>
#include <QPainter>
#include <QScrollArea>
#include <QScrollBar>
#include <QToolTip>
#include <QVBoxLayout>
#include <QWheelEvent>
#include <cmath>
#include <functional>

namespace kiln::viewers {

namespace {

QColor category_colour(const std::string& c) {
  if (c == "kernel") return QColor(66, 133, 244);
  if (c == "extern") return QColor(52, 168, 83);
  if (c == "region") return QColor(154, 160, 166);
  if (c == "guard") return QColor(251, 188, 4);
  if (c == "interpreter" || c == "fallback") return QColor(234, 67, 53);
  if (c == "iteration") return QColor(38, 166, 154);
  if (c == "cpu_op") return QColor(126, 87, 194);
  if (c == "cuda_runtime" || c == "cuda_driver") return QColor(176, 190, 197);
  if (c == "memcpy" || c == "memset") return QColor(255, 112, 67);
  if (c == "compile") return QColor(121, 85, 72);
  size_t h = std::hash<std::string>{}(c);
  return QColor::fromHsl(static_cast<int>(h % 360), 120, 150);
}

QString duration(int64_t ns) {
  if (ns >= 1000000) return QString::number(ns / 1e6, 'f', 3) + " ms";
  if (ns >= 1000) return QString::number(ns / 1e3, 'f', 2) + " us";
  return QString::number(ns) + " ns";
}

}  // namespace

TimelineCanvas::TimelineCanvas(SelectionContext* ctx, QWidget* parent) : QWidget(parent), ctx_(ctx) {
  setMouseTracking(true);
  setFocusPolicy(Qt::StrongFocus);
  setMinimumHeight(120);
}

void TimelineCanvas::setData(TimelineData data) {
  data_ = std::move(data);
  setMinimumHeight(contentHeight());
  fitAll();
}

int TimelineCanvas::contentHeight() const {
  int h = kRuler;
  for (const auto& b : data_.blocks) h += kBlockHeader + kRowHeight * static_cast<int>(b.lanes.size());
  return std::max(h, 120);
}

int TimelineCanvas::laneTop(int block, int lane) const {
  int y = kRuler;
  for (int b = 0; b < block; ++b) y += kBlockHeader + kRowHeight * static_cast<int>(data_.blocks[b].lanes.size());
  return y + kBlockHeader + kRowHeight * lane;
}

void TimelineCanvas::fitAll() {
  double span = static_cast<double>(std::max<int64_t>(1, data_.end - data_.start));
  geometry_.fit(data_.start - span * 0.01, data_.end + span * 0.01, std::max(1, width() - kLabelWidth));
  update();
}

void TimelineCanvas::resizeEvent(QResizeEvent*) { update(); }

void TimelineCanvas::renderTo(QPainter& p, int width, int height) {
  const double area = std::max(1, width - kLabelWidth);
  p.fillRect(0, 0, width, height, QColor(250, 250, 252));
  // Ruler.
  QFont f = font();
  f.setPointSizeF(std::max(6.0, f.pointSizeF() * 0.85));
  p.setFont(f);
  double step_ns = std::pow(10.0, std::floor(std::log10(std::max(1.0, geometry_.ns_per_px * 120))));
  double first = std::max(0.0, std::ceil(geometry_.t_of(0) / step_ns) * step_ns);
  p.setPen(QColor(120, 120, 130));
  for (double t = first; geometry_.x_of(t) < area; t += step_ns) {
    int x = kLabelWidth + static_cast<int>(geometry_.x_of(t));
    p.drawLine(x, kRuler - 5, x, kRuler);
    p.drawText(x + 2, kRuler - 6, duration(static_cast<int64_t>(t)));
  }
  const Selection& sel = ctx_->current();
  for (int b = 0; b < static_cast<int>(data_.blocks.size()); ++b) {
    const auto& block = data_.blocks[b];
    int top = laneTop(b, 0) - kBlockHeader;
    if (top > height) break;
    bool selected_run = block.run >= 0 && block.run == sel.run;
    p.fillRect(0, top, width, kBlockHeader, selected_run ? QColor(255, 243, 224) : QColor(232, 236, 242));
    p.setPen(QColor(40, 40, 50));
    QFont bold = f;
    bold.setBold(true);
    p.setFont(bold);
    p.drawText(6, top + kBlockHeader - 6, QString::fromStdString(block.title));
    p.setFont(f);
    for (int l = 0; l < static_cast<int>(block.lanes.size()); ++l) {
      const auto& lane = block.lanes[l];
      int y = laneTop(b, l);
      if (y > height) break;
      if (y + kRowHeight < 0) continue;
      if (l % 2) p.fillRect(0, y, width, kRowHeight, QColor(244, 245, 248));
      p.setPen(QColor(70, 70, 80));
      p.drawText(QRect(6, y, kLabelWidth - 10, kRowHeight), Qt::AlignVCenter | Qt::AlignLeft,
                 p.fontMetrics().elidedText(QString::fromStdString(lane.title), Qt::ElideMiddle, kLabelWidth - 10));
      p.save();
      p.setClipRect(kLabelWidth, y, width - kLabelWidth, kRowHeight);
      for (const auto& item : visible_items(lane, geometry_, area)) {
        const auto& e = lane.events[item.first];
        QRectF r(kLabelWidth + item.x0, y + 2, std::max(1.0, item.x1 - item.x0), kRowHeight - 4);
        if (item.count > 1) {
          p.fillRect(r, QColor(150, 155, 165));
          continue;
        }
        QColor c = category_colour(data_.names[e.category]);
        p.fillRect(r, c);
        const session::TimelineEvent* src =
            sel.session && e.source >= 0 && e.source < static_cast<int>(sel.session->timeline.size())
                ? &sel.session->timeline[e.source]
                : nullptr;
        if (src && !sel.kernel.empty() && src->kernel == sel.kernel) {
          p.setPen(QPen(QColor(230, 81, 0), 2));
          p.drawRect(r.adjusted(-1, -1, 1, 1));
        }
        if (r.width() > 40) {
          p.setPen(Qt::white);
          p.drawText(r.adjusted(3, 0, -2, 0), Qt::AlignVCenter | Qt::AlignLeft,
                     p.fontMetrics().elidedText(QString::fromStdString(data_.names[e.name]), Qt::ElideRight,
                                                static_cast<int>(r.width()) - 5));
        }
      }
      p.restore();
    }
  }
  p.setPen(QColor(200, 200, 210));
  p.drawLine(kLabelWidth - 1, 0, kLabelWidth - 1, height);
}

void TimelineCanvas::paintEvent(QPaintEvent*) {
  QPainter p(this);
  renderTo(p, width(), height());
}

TimelineCanvas::Hit TimelineCanvas::hitAt(QPoint pt) const {
  Hit h;
  if (pt.x() < kLabelWidth) return h;
  for (int b = 0; b < static_cast<int>(data_.blocks.size()); ++b)
    for (int l = 0; l < static_cast<int>(data_.blocks[b].lanes.size()); ++l) {
      int y = laneTop(b, l);
      if (pt.y() < y || pt.y() >= y + kRowHeight) continue;
      h.block = b;
      h.lane = l;
      double x = pt.x() - kLabelWidth;
      for (const auto& item : visible_items(data_.blocks[b].lanes[l], geometry_, std::max(1, width() - kLabelWidth)))
        if (x >= item.x0 - 1 && x <= item.x1 + 1) {
          h.event = item.first;
          h.count = item.count;
          // Prefer the innermost (shortest) event under the cursor among nested spans.
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

bool TimelineCanvas::revealKernel(const std::string& kernel, int run) {
  const auto* s = ctx_->session();
  if (!s || kernel.empty()) return false;
  for (const auto& b : data_.blocks) {
    if (run >= 0 && b.run != run) continue;
    for (const auto& l : b.lanes)
      for (const auto& e : l.events)
        if (e.source >= 0 && s->timeline[e.source].kernel == kernel) {
          double area = std::max(1, width() - kLabelWidth);
          double centre = static_cast<double>(e.start) + static_cast<double>(e.dur) / 2;
          if (geometry_.x_of(centre) < 0 || geometry_.x_of(centre) > area) geometry_.t0 = centre - area / 2 * geometry_.ns_per_px;
          update();
          return true;
        }
  }
  return false;
}

void TimelineCanvas::publishRange() {
  double area = std::max(1, width() - kLabelWidth);
  ctx_->setTimeRange({static_cast<int64_t>(geometry_.t_of(0)), static_cast<int64_t>(geometry_.t_of(area))});
}

void TimelineCanvas::wheelEvent(QWheelEvent* e) {
  double x = e->position().x() - kLabelWidth;
  geometry_.zoom_at(std::max(0.0, x), e->angleDelta().y() > 0 ? 1.25 : 0.8);
  update();
  publishRange();
}

void TimelineCanvas::mousePressEvent(QMouseEvent* e) {
  press_ = e->pos();
  dragging_ = true;
  moved_ = false;
}

void TimelineCanvas::mouseMoveEvent(QMouseEvent* e) {
  if (dragging_ && (e->buttons() & Qt::LeftButton)) {
    int dx = e->pos().x() - press_.x();
    if (std::abs(dx) > 2 || moved_) {
      geometry_.pan_px(dx);
      press_ = e->pos();
      moved_ = true;
      update();
    }
    return;
  }
  Hit h = hitAt(e->pos());
  const auto* s = ctx_->session();
  if (h.event < 0 || !s) {
    QToolTip::hideText();
    return;
  }
  const auto& pe = data_.blocks[h.block].lanes[h.lane].events[h.event];
  QString tip;
  if (h.count > 1) {
    tip = QString("%1 events folded (zoom in to see them)").arg(h.count);
  } else {
    const auto& ev = s->timeline[pe.source];
    tip = QString::fromStdString(ev.name) + "\n" + QString::fromStdString(ev.category) + " · " + duration(ev.dur_ns);
    if (!ev.kernel.empty()) tip += "\nkernel " + QString::fromStdString(ev.kernel);
    if (!ev.compile_id.empty()) tip += "\ncompile id " + QString::fromStdString(ev.compile_id);
  }
  QToolTip::showText(e->globalPosition().toPoint(), tip, this);
}

void TimelineCanvas::mouseReleaseEvent(QMouseEvent* e) {
  dragging_ = false;
  if (moved_) {
    publishRange();
    return;
  }
  Hit h = hitAt(e->pos());
  const auto* s = ctx_->session();
  if (h.event < 0 || h.count > 1 || !s) return;
  const auto& pe = data_.blocks[h.block].lanes[h.lane].events[h.event];
  if (pe.source < 0) return;
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
    case Qt::Key_F: fitAll(); break;
    default: QWidget::keyPressEvent(e); return;
  }
  update();
  publishRange();
}

TimelinePanel::TimelinePanel(SelectionContext* ctx, QWidget* parent) : QWidget(parent), ctx_(ctx) {
  canvas_ = new TimelineCanvas(ctx, this);
  scroll_ = new QScrollArea(this);
  scroll_->setWidget(canvas_);
  scroll_->setWidgetResizable(true);
  scroll_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  info_ = new QLabel(this);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  layout->addWidget(info_);
  layout->addWidget(scroll_, 1);
  connect(ctx_, &SelectionContext::selectionChanged, this, &TimelinePanel::onSelection);
  onSelection(ctx_->current(), kSessionPart);
}

void TimelinePanel::onSelection(const Selection& sel, unsigned parts) {
  if (parts & kSessionPart) {
    canvas_->setData(sel.session ? pack_timeline(*sel.session) : TimelineData{});
    const auto& d = canvas_->data();
    size_t events = 0;
    for (const auto& b : d.blocks)
      for (const auto& l : b.lanes) events += l.events.size();
    info_->setText(sel.session ? QString("%1 events in %2 lanes, %3 blocks · wheel or W/S zoom, drag or A/D pan, F fits")
                                     .arg(events)
                                     .arg(d.lane_count())
                                     .arg(d.blocks.size())
                               : QString("No timeline: open a session."));
  }
  if (parts & kKernelPart) canvas_->revealKernel(sel.kernel, sel.run);
  if (parts & (kKernelPart | kRunPart | kSessionPart)) canvas_->update();
}

}  // namespace kiln::viewers
