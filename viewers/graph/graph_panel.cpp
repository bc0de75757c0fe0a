#include "viewers/graph/graph_panel.h"

#include <QComboBox>
#include <QGraphicsRectItem>
#include <QGraphicsScene>
#include <QGraphicsSimpleTextItem>
#include <QHBoxLayout>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QPainterPath>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QStackedWidget>
#include <QVBoxLayout>
#include <QWheelEvent>
#include <QtConcurrent>
#include <cmath>
#include <functional>

#include "engine/base/error.h"

namespace kiln::viewers {

namespace {

constexpr int kIdRole = 0;  // QGraphicsItem::data key holding the box id

QColor kernel_colour(const std::string& kernel) {
  if (kernel.empty()) return QColor(236, 239, 243);
  size_t h = std::hash<std::string>{}(kernel);
  return QColor::fromHsl(static_cast<int>(h % 360), 150, 215);
}

QString box_id(QGraphicsItem* item) {
  for (; item; item = item->parentItem())
    if (item->data(kIdRole).isValid()) return item->data(kIdRole).toString();
  return {};
}

std::string us_text(double ns) {
  char buf[32];
  if (ns >= 1e6) std::snprintf(buf, sizeof buf, "%.2f ms", ns / 1e6);
  else std::snprintf(buf, sizeof buf, "%.1f us", ns / 1e3);
  return buf;
}

}  // namespace

void GraphCanvas::wheelEvent(QWheelEvent* e) {
  double f = e->angleDelta().y() > 0 ? 1.2 : 1 / 1.2;
  setTransformationAnchor(QGraphicsView::AnchorUnderMouse);
  scale(f, f);
}

void GraphCanvas::mousePressEvent(QMouseEvent* e) {
  QString id = box_id(itemAt(e->pos()));
  if (!id.isEmpty() && e->button() == Qt::LeftButton) Q_EMIT boxClicked(id);
  QGraphicsView::mousePressEvent(e);
}

void GraphCanvas::mouseDoubleClickEvent(QMouseEvent* e) {
  QString id = box_id(itemAt(e->pos()));
  if (!id.isEmpty()) Q_EMIT boxDoubleClicked(id);
  QGraphicsView::mouseDoubleClickEvent(e);
}

void GraphCanvas::keyPressEvent(QKeyEvent* e) {
  if (e->key() == Qt::Key_Plus || e->key() == Qt::Key_Equal) scale(1.2, 1.2);
  else if (e->key() == Qt::Key_Minus) scale(1 / 1.2, 1 / 1.2);
  else if (e->key() == Qt::Key_F && scene()) fitInView(scene()->itemsBoundingRect(), Qt::KeepAspectRatio);
  else QGraphicsView::keyPressEvent(e);
}

GraphPanel::GraphPanel(SelectionContext* ctx, QWidget* parent) : QWidget(parent), ctx_(ctx) {
  pool_.setMaxThreadCount(1);
  region_ = new QComboBox(this);
  stage_ = new QComboBox(this);
  find_ = new QLineEdit(this);
  find_->setPlaceholderText("find node or op");
  auto* fit_button = new QPushButton("Fit", this);
  auto* modules = new QPushButton("Expand modules", this);
  status_ = new QLabel(this);
  auto* bar = new QHBoxLayout;
  bar->addWidget(new QLabel("Region", this));
  bar->addWidget(region_);
  bar->addWidget(new QLabel("Stage", this));
  bar->addWidget(stage_);
  bar->addWidget(find_, 1);
  bar->addWidget(fit_button);
  bar->addWidget(modules);
  scene_ = new QGraphicsScene(this);
  view_ = new GraphCanvas(scene_, this);
  view_->setRenderHint(QPainter::Antialiasing);
  view_->setDragMode(QGraphicsView::ScrollHandDrag);
  text_ = new QPlainTextEdit(this);
  text_->setReadOnly(true);
  text_->setLineWrapMode(QPlainTextEdit::NoWrap);
  pages_ = new QStackedWidget(this);
  pages_->addWidget(view_);
  pages_->addWidget(text_);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  layout->addLayout(bar);
  layout->addWidget(pages_, 1);
  layout->addWidget(status_);

  connect(region_, &QComboBox::currentIndexChanged, this, [this] {
    if (!syncing_) ctx_->setRegion(region_->currentData().toString().toStdString());
  });
  connect(stage_, &QComboBox::currentIndexChanged, this, [this] {
    if (!syncing_) ctx_->setStage(stage_->currentText().toStdString());
  });
  connect(find_, &QLineEdit::returnPressed, this, &GraphPanel::search);
  connect(fit_button, &QPushButton::clicked, this, &GraphPanel::fit);
  connect(modules, &QPushButton::clicked, this, [this, modules] {
    if (collapsed_.empty()) {
      collapsed_ = default_collapsed(model_, 0);
      modules->setText("Expand modules");
    } else {
      collapsed_.clear();
      modules->setText("Collapse modules");
    }
    startLayout();
  });
  connect(view_, &GraphCanvas::boxClicked, this, [this](const QString& id) {
    std::string box = id.toStdString();
    if (model_.index.count(box)) ctx_->selectNode(ctx_->current().compile_id, box);
  });
  connect(view_, &GraphCanvas::boxDoubleClicked, this, [this](const QString& id) { toggle(id.toStdString()); });
  connect(&watcher_, &QFutureWatcher<GraphLayout>::finished, this, [this] {
    if (watcher_.property("generation").toULongLong() != generation_) return;  // stale
    build(watcher_.result());
  });
  connect(ctx_, &SelectionContext::selectionChanged, this, &GraphPanel::onSelection);
  onSelection(ctx_->current(), kSessionPart);
}

GraphPanel::~GraphPanel() {
  ++generation_;
  watcher_.waitForFinished();
}

void GraphPanel::onSelection(const Selection& sel, unsigned parts) {
  if (parts & kSessionPart) {
    syncing_ = true;
    region_->clear();
    if (sel.session)
      for (const auto& r : sel.session->regions) region_->addItem(QString::fromStdString(r.compile_id), QString::fromStdString(r.compile_id));
    syncing_ = false;
  }
  if (parts & (kSessionPart | kRegionPart)) {
    reload();
    return;
  }
  if (parts & (kNodePart | kKernelPart | kRunPart)) applyHighlight();
}

void GraphPanel::reload() {
  const Selection& sel = ctx_->current();
  syncing_ = true;
  region_->setCurrentIndex(region_->findData(QString::fromStdString(sel.compile_id)));
  stage_->clear();
  const session::CompiledRegion* r = sel.session ? find_region(*sel.session, sel.compile_id) : nullptr;
  const session::StageGraph* g = nullptr;
  if (r)
    for (const auto& st : r->graphs) {
      stage_->addItem(QString::fromStdString(st.stage));
      if (st.stage == sel.stage) g = &st;
    }
  if (r && !g && !r->graphs.empty()) g = &r->graphs.front();
  if (g) stage_->setCurrentText(QString::fromStdString(g->stage));
  syncing_ = false;
  kernel_of_.clear();
  if (sel.session)
    for (const auto& k : sel.session->kernels)
      if (k.compile_id == sel.compile_id)
        for (const auto& n : k.nodes) kernel_of_.emplace(n, k.name);
  scene_->clear();
  items_.clear();
  if (!g) {
    text_->setPlainText(sel.session ? "This region has no graph." : "Open a model, a session or a trace.");
    pages_->setCurrentWidget(text_);
    status_->clear();
    return;
  }
  if (g->json.empty()) {  // imported graphs come as text (their own printer's form)
    text_->setPlainText(QString::fromStdString(g->text));
    pages_->setCurrentWidget(text_);
    status_->setText("This stage was recorded as text; it is shown as written.");
    return;
  }
  try {
    model_ = parse_graph_json(g->json);
  } catch (const Error& e) {
    text_->setPlainText(QString::fromStdString(g->text));
    pages_->setCurrentWidget(text_);
    status_->setText(QString::fromStdString(e.what()));
    return;
  }
  collapsed_ = default_collapsed(model_);
  startLayout();
}

void GraphPanel::showModel(GraphModel model, std::set<std::string> collapsed) {
  model_ = std::move(model);
  collapsed_ = std::move(collapsed);
  kernel_of_.clear();
  startLayout();
}

void GraphPanel::startLayout() {
  quint64 gen = ++generation_;
  status_->setText(QString("laying out %1 nodes...").arg(model_.nodes.size()));
  GraphModel m = model_;
  std::set<std::string> c = collapsed_;
  watcher_.setProperty("generation", QVariant::fromValue(gen));
  watcher_.setFuture(QtConcurrent::run(&pool_, [m, c] { return layout_graph(m, c); }));
}

void GraphPanel::waitForLayout() {
  watcher_.waitForFinished();
  QCoreApplication::processEvents();
}

QGraphicsRectItem* GraphPanel::boxItem(const std::string& id) const {
  auto it = items_.find(id);
  return it == items_.end() ? nullptr : it->second;
}

void GraphPanel::build(const GraphLayout& layout) {
  scene_->clear();
  items_.clear();
  if (!layout.error.empty()) {
    std::string listing;
    for (const auto& n : model_.nodes) listing += n.name + " = " + n.target + "  " + n.shape + "\n";
    text_->setPlainText(QString::fromStdString(layout.error + "\n\n" + listing));
    pages_->setCurrentWidget(text_);
    status_->setText(QString::fromStdString(layout.error));
    return;
  }
  pages_->setCurrentWidget(view_);
  QFont small = font();
  small.setPointSizeF(small.pointSizeF() * 0.85);
  QPen edge_pen(QColor(120, 128, 140), 1.0);
  for (const auto& e : layout.edges) {
    if (e.points.size() < 2) continue;
    QPainterPath path(QPointF(e.points[0].first, e.points[0].second));
    for (size_t i = 1; i + 2 < e.points.size(); i += 3)
      path.cubicTo(QPointF(e.points[i].first, e.points[i].second), QPointF(e.points[i + 1].first, e.points[i + 1].second),
                   QPointF(e.points[i + 2].first, e.points[i + 2].second));
    scene_->addPath(path, edge_pen);
    // Arrow head at the end point.
    QPointF tip(e.points.back().first, e.points.back().second);
    scene_->addEllipse(tip.x() - 2, tip.y() - 2, 4, 4, edge_pen, QBrush(edge_pen.color()));
  }
  // Expanded module clusters: the bounding box of their members, behind them.
  std::map<std::string, QRectF> clusters;
  for (const auto& b : layout.boxes) {
    auto idx = model_.index.find(b.id);
    if (idx == model_.index.end()) continue;
    const auto& mod = model_.nodes[idx->second].module;
    for (size_t i = 0; i <= mod.size() && !mod.empty(); ++i)
      if (i == mod.size() || mod[i] == '.') clusters[mod.substr(0, i)] |= QRectF(b.x, b.y, b.w, b.h);
  }
  for (const auto& [path, rect] : clusters) {
    int depth = static_cast<int>(std::count(path.begin(), path.end(), '.'));
    auto* c = scene_->addRect(rect.adjusted(-8 - 4 * (3 - std::min(depth, 3)), -18, 8, 6),
                              QPen(QColor(150, 160, 190), 1, Qt::DashLine), QBrush(QColor(120, 140, 200, 18)));
    c->setZValue(-10 + depth);
    c->setData(kIdRole, QString::fromStdString("cluster:" + path));
    c->setToolTip(QString::fromStdString(path + " (double-click to collapse)"));
    auto* label = scene_->addSimpleText(QString::fromStdString(path), small);
    label->setBrush(QColor(90, 100, 140));
    label->setPos(c->rect().topLeft() + QPointF(4, 2));
  }
  for (const auto& b : layout.boxes) {
    auto* item = scene_->addRect(QRectF(b.x, b.y, b.w, b.h));
    item->setData(kIdRole, QString::fromStdString(b.id));
    std::string line1, line2;
    auto idx = model_.index.find(b.id);
    if (idx != model_.index.end()) {
      const auto& n = model_.nodes[idx->second];
      line1 = n.op == "call_function" ? n.target : n.op + " " + n.name;
      line2 = n.shape;
      item->setToolTip(QString::fromStdString(n.name + " = " + n.target + "\n" + n.shape +
                                              (n.module.empty() ? "" : "\nmodule " + n.module)));
    } else {
      line1 = b.id.substr(7);
      auto dot = graph_dot(model_, collapsed_);
      line2 = std::to_string(dot.members[b.id]) + " nodes (double-click)";
      item->setToolTip(QString::fromStdString("module " + line1 + " collapsed"));
    }
    auto* t1 = new QGraphicsSimpleTextItem(QString::fromStdString(line1), item);
    t1->setFont(small);
    t1->setPos(b.x + 5, b.y + 3);
    auto* t2 = new QGraphicsSimpleTextItem(QString::fromStdString(line2), item);
    t2->setFont(small);
    t2->setBrush(QColor(70, 70, 80));
    t2->setPos(b.x + 5, b.y + b.h / 2);
    items_[b.id] = item;
  }
  // Graph breaks: where this region ends, a marker under its output.
  const Selection& sel = ctx_->current();
  if (sel.session)
    if (const auto* r = find_region(*sel.session, sel.compile_id))
      for (const auto& br : sel.session->breaks)
        if (br.info.ends_region >= 0 && br.info.ends_region == r->region) {
          std::string text = "graph break " + br.info.id + ": " + br.info.reason;
          if (br.info.loc.line > 0) text += "  (line " + std::to_string(br.info.loc.line) + ")";
          auto* mark = scene_->addSimpleText(QString::fromStdString(text), font());
          mark->setBrush(QColor(190, 30, 30));
          mark->setPos(0, layout.height + 12);
        }
  status_->setText(QString("%1 nodes, %2 boxes, %3 collapsed modules · wheel to zoom, drag to pan, F to fit")
                       .arg(model_.nodes.size())
                       .arg(layout.boxes.size())
                       .arg(collapsed_.size()));
  applyHighlight();
  fit();
}

std::set<std::string> GraphPanel::highlighted() const {
  std::set<std::string> out;
  for (const auto& [id, item] : items_)
    if (item->pen().width() >= 3) out.insert(id);
  return out;
}

void GraphPanel::applyHighlight() {
  const Selection& sel = ctx_->current();
  const session::Kernel* k = sel.session && !sel.kernel.empty() ? find_kernel(*sel.session, sel.kernel, sel.compile_id) : nullptr;
  std::set<std::string> lit;
  if (k)
    for (const auto& n : k->nodes) lit.insert(n);
  // Cost overlay: the selected run's time per kernel (device lanes when the run has them).
  std::map<std::string, double> cost;
  if (sel.session && sel.run >= 0) {
    bool device = false;
    for (const auto& e : sel.session->timeline)
      if (e.run == sel.run && e.lane.rfind("cuda:", 0) == 0) {
        device = true;
        break;
      }
    for (const auto& e : sel.session->timeline)
      if (e.run == sel.run && !e.kernel.empty() && (e.category == "kernel" || e.category == "extern") &&
          (!device || e.lane.rfind("cuda:", 0) == 0) && (e.compile_id.empty() || e.compile_id == sel.compile_id))
        cost[e.kernel] += static_cast<double>(e.dur_ns);
  }
  double max_cost = 0;
  for (const auto& [name, ns] : cost) max_cost = std::max(max_cost, ns);
  for (auto& [id, item] : items_) {
    auto kit = kernel_of_.find(id);
    std::string kernel = kit == kernel_of_.end() ? "" : kit->second;
    QColor fill = id.rfind("module:", 0) == 0 ? QColor(225, 230, 245) : kernel_colour(kernel);
    auto c = cost.find(kernel);
    if (c != cost.end() && max_cost > 0) {
      double f = c->second / max_cost;
      fill = QColor::fromRgbF(1.0, 1.0 - 0.55 * f, 1.0 - 0.75 * f);
      item->setToolTip(item->toolTip().section("\n[", 0, 0) +
                       QString::fromStdString("\n[" + kernel + ": " + us_text(c->second) + " in the selected run]"));
    }
    item->setBrush(fill);
    bool on = lit.count(id) || (!sel.node.empty() && id == sel.node);
    item->setPen(on ? QPen(QColor(230, 120, 0), 3) : QPen(QColor(90, 96, 110), 1));
  }
  if (!lit.empty() || !sel.node.empty()) {
    std::string first = !sel.node.empty() && items_.count(sel.node) ? sel.node : "";
    for (const auto& n : lit)
      if (first.empty() && items_.count(n)) first = n;
    if (!first.empty()) view_->centerOn(items_[first]);
  }
}

void GraphPanel::toggle(const std::string& box) {
  if (box.rfind("module:", 0) == 0) collapsed_.erase(box.substr(7));
  else if (box.rfind("cluster:", 0) == 0) collapsed_.insert(box.substr(8));
  else return;
  startLayout();
}

void GraphPanel::search() {
  std::string q = find_->text().toStdString();
  if (q.empty()) return;
  for (const auto& n : model_.nodes)
    if (n.name.find(q) != std::string::npos || n.target.find(q) != std::string::npos) {
      std::string box = box_of(n, collapsed_);
      if (box != n.name) {
        collapsed_.erase(box.substr(7));
        startLayout();
        return;
      }
      ctx_->selectNode(ctx_->current().compile_id, n.name);
      if (items_.count(n.name)) view_->centerOn(items_[n.name]);
      return;
    }
  status_->setText(QString::fromStdString("no node or op matches '" + q + "'"));
}

void GraphPanel::fit() {
  if (!scene_->items().isEmpty()) view_->fitInView(scene_->itemsBoundingRect(), Qt::KeepAspectRatio);
}

}  // namespace kiln::viewers
