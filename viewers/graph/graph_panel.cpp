#include "viewers/graph/graph_panel.h"

#include <QComboBox>
#include <QFontDatabase>
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
#include <QTextDocumentFragment>
#include <QVBoxLayout>
#include <QWheelEvent>
#include <QtConcurrent>
#include <cmath>
#include <functional>

#include "engine/api/files.h"
#include "engine/api/import.h"
#include "viewers/common/time_change.h"
#include "viewers/graph/graph_compare.h"
#include "viewers/graph/graph_time.h"

namespace kiln::viewers {

namespace {

QColor kernel_colour(const std::string& kernel) {
  if (kernel.empty()) return QColor(236, 239, 243);
  size_t h = std::hash<std::string>{}(kernel);
  return QColor::fromHsl(static_cast<int>(h % 360), 150, 215);
}

// The tint of a box whose share of the time is `f` of the largest (0..1): white to warm orange.
QColor time_tint(double f) { return QColor::fromRgbF(1.0, 1.0 - 0.55 * f, 1.0 - 0.75 * f); }

// A comparison's colour for time_change_tone t in [-1, 1]: green (B faster) through white to red
// (B slower).
QColor change_tint(double t) {
  const double f = std::min(1.0, std::abs(t));
  return t >= 0 ? QColor::fromRgbF(1.0, 1.0 - 0.62 * f, 1.0 - 0.62 * f)
                : QColor::fromRgbF(1.0 - 0.55 * f, 1.0 - 0.12 * f, 1.0 - 0.5 * f);
}

QString change_detail(const BoxTimeChange& c) {
  auto ms = [](double v) { return v < 0 ? QString("–") : QString::number(v, 'f', 3); };
  QString text = QString("%1 → %2 ms").arg(ms(c.a_ms), ms(c.b_ms));
  if (c.a_ms > 0 && c.b_ms >= 0)
    text += QString(" %1%2%").arg(c.b_ms >= c.a_ms ? "+" : "").arg(100 * (c.b_ms / c.a_ms - 1), 0, 'f', 0);
  if (c.inclusive) return text;
  return (c.module.empty() ? QString("model") : QString::fromStdString(c.module)) + " " + text;
}
bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// A stage that can be drawn: Kiln's JSON graph, a DOT graph or FX graph code.
bool drawable(const session::StageGraph& g) {
  return !g.json.empty() || !g.dot.empty() || (ends_with(g.stage, "_graph") && importers::looks_like_fx_readable(g.text));
}

// The stage a region opens at: its first drawable one ("" when none: the selection's rule).
std::string first_drawable_stage(const session::CompiledRegion& r) {
  for (const auto& g : r.graphs)
    if (drawable(g)) return g.stage;
  return "";
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
  QString id = graph_box_id(itemAt(e->pos()));
  if (!id.isEmpty() && e->button() == Qt::LeftButton) Q_EMIT boxClicked(id);
  QGraphicsView::mousePressEvent(e);
}

void GraphCanvas::mouseDoubleClickEvent(QMouseEvent* e) {
  QString id = graph_box_id(itemAt(e->pos()));
  if (!id.isEmpty()) Q_EMIT boxDoubleClicked(id);
  QGraphicsView::mouseDoubleClickEvent(e);
}

void GraphCanvas::keyPressEvent(QKeyEvent* e) {
  if (e->key() == Qt::Key_Plus || e->key() == Qt::Key_Equal) scale(1.2, 1.2);
  else if (e->key() == Qt::Key_Minus) scale(1 / 1.2, 1 / 1.2);
  else if (e->key() == Qt::Key_F && scene()) fitInView(scene()->itemsBoundingRect(), Qt::KeepAspectRatio);
  else QGraphicsView::keyPressEvent(e);
}

GraphPanel::GraphPanel(SelectionContext* ctx, QWidget* parent) : SessionPanel(ctx, parent) {
  pool_.setMaxThreadCount(1);  // the one thread that calls Graphviz for this panel
  pool_.setExpiryTimeout(-1);
  region_ = new QComboBox(this);
  region_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  stage_ = new QComboBox(this);
  stage_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  find_ = new QLineEdit(this);
  find_->setPlaceholderText("find node or op (Enter: next)");
  find_->setClearButtonEnabled(true);
  auto* fit_button = new QPushButton("Fit", this);
  fit_button->setToolTip("Fit the graph in the view (F)");
  modules_ = new QPushButton("Collapse modules", this);
  status_ = new QLabel(this);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  legend_ = new QLabel(this);
  legend_->setTextFormat(Qt::RichText);
  auto* bar = new QHBoxLayout;
  bar->addWidget(new QLabel("Region", this));
  bar->addWidget(region_);
  bar->addWidget(new QLabel("Stage", this));
  bar->addWidget(stage_);
  bar->addWidget(find_, 1);
  bar->addWidget(fit_button);
  bar->addWidget(modules_);
  scene_ = new QGraphicsScene(this);
  view_ = new GraphCanvas(scene_, this);
  view_->setRenderHint(QPainter::Antialiasing);
  view_->setRenderHint(QPainter::TextAntialiasing);
  view_->setDragMode(QGraphicsView::ScrollHandDrag);
  view_->setViewportUpdateMode(QGraphicsView::SmartViewportUpdate);
  view_->setBackgroundBrush(QColor(252, 252, 253));
  text_ = new QPlainTextEdit(this);
  text_->setReadOnly(true);
  text_->setLineWrapMode(QPlainTextEdit::NoWrap);
  text_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  pages_ = new QStackedWidget(this);
  pages_->addWidget(view_);
  pages_->addWidget(text_);
  auto* layout = panelLayout();
  layout->addLayout(bar);
  layout->addWidget(pages_, 1);
  auto* foot = new QHBoxLayout;
  foot->addWidget(status_, 1);
  foot->addWidget(legend_);
  layout->addLayout(foot);

  connect(region_, &QComboBox::currentIndexChanged, this, [this] {
    if (!syncing_) ctx_->setRegion(region_->currentData().toString().toStdString());
  });
  connect(stage_, &QComboBox::currentIndexChanged, this, [this] {
    if (!syncing_) ctx_->setStage(stage_->currentText().toStdString());
  });
  connect(find_, &QLineEdit::returnPressed, this, &GraphPanel::search);
  connect(find_, &QLineEdit::textChanged, this, [this] { found_.clear(); });
  connect(fit_button, &QPushButton::clicked, this, &GraphPanel::fit);
  connect(modules_, &QPushButton::clicked, this, [this] {
    if (collapsed_.empty()) collapsed_ = default_collapsed(model_, 0);
    else collapsed_.clear();
    startLayout();
  });
  connect(view_, &GraphCanvas::boxClicked, this, [this](const QString& id) {
    std::string box = id.toStdString();
    if (model_.index.count(box) || (!dot_.empty() && drawn_.boxes.count(box)))
      ctx_->selectNode(ctx_->current().compile_id, box);
  });
  connect(view_, &GraphCanvas::boxDoubleClicked, this, [this](const QString& id) { toggle(id.toStdString()); });
  connect(&watcher_, &QFutureWatcher<GraphLayout>::finished, this, [this] {
    if (watcher_.property("generation").toULongLong() != generation_) return;  // stale: a newer one runs
    build(watcher_.result());
  });
  followSelection();
}

GraphPanel::~GraphPanel() {
  ++generation_;
  watcher_.waitForFinished();
}

QGraphicsView* GraphPanel::view() const { return view_; }

void GraphPanel::onSelectionChanged(const Selection& sel, unsigned parts) {
  if (parts & kSessionPart) {
    syncing_ = true;
    region_->clear();
    if (sel.session)
      for (const auto& r : sel.session->regions) {
        QString label = QString::fromStdString(r.compile_id);
        if (first_drawable_stage(r).empty()) label += " (text)";
        region_->addItem(label, QString::fromStdString(r.compile_id));
      }
    syncing_ = false;
    // Open at the slowest region's first drawable stage. Queued: every panel sees the new session
    // before the region changes; skipped when the selection moved on meanwhile.
    if (sel.session) {
      std::string id = slowest_region(*sel.session, sel.run);
      const auto* r = find_region(*sel.session, id);
      std::string stage = r ? first_drawable_stage(*r) : "";
      if (r && (id != sel.compile_id || (!stage.empty() && stage != sel.stage))) {
        const session::Session* opened = sel.session.get();
        QMetaObject::invokeMethod(
            this,
            [this, opened, was = sel.compile_id, id, stage] {
              if (ctx_->session() == opened && ctx_->current().compile_id == was) ctx_->setRegion(id, stage);
            },
            Qt::QueuedConnection);
      }
    }
  }
  if (parts & (kSessionPart | kRegionPart)) {
    reload();
    return;
  }
  if (parts & (kNodePart | kKernelPart | kRunPart | kComparePart)) applyHighlight();
}

void GraphPanel::showText(const QString& text, const QString& status) {
  ++generation_;  // a layout still running for the previous graph is stale now
  scene_->clear();
  drawn_ = {};
  text_->setPlainText(text);
  pages_->setCurrentWidget(text_);
  status_->setText(status);
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
  model_ = {};
  dot_.clear();
  found_.clear();
  pending_.clear();
  legend_->clear();
  if (!g) {
    showText(sel.session ? "This region has no graph." : "Open a model, a session or a trace.", "");
    return;
  }
  // FX graph code of sessions imported before the importer kept it as JSON: read it now.
  std::string json = g->json, unread;
  if (json.empty() && g->dot.empty() && drawable(*g)) json = importers::fx_readable_json(g->text, &unread);
  if (!json.empty()) {
    try {
      model_ = parse_graph_json(json);
    } catch (const Error& e) {
      showText(QString::fromStdString(g->text), QString::fromStdString(std::string(e.what()) + "; shown as text"));
      return;
    }
    if (fold_params_) model_ = fold_parameters(model_);
    collapsed_ = default_collapsed(model_);
    first_view_ = true;
    startLayout();
  } else if (!g->dot.empty()) {  // an imported graph that came as DOT: Graphviz lays out its own labels
    dot_ = g->dot;
    collapsed_.clear();
    startLayout();
  } else {  // imported graphs that came as text (their own printer's form)
    showText(QString::fromStdString(g->text),
             unread.empty() ? QString("This stage was recorded as text; it is shown as written.")
                            : QString::fromStdString("This stage is shown as written: " + unread + "."));
  }
}

void GraphPanel::showModel(GraphModel model, std::set<std::string> collapsed) {
  model_ = std::move(model);
  collapsed_ = std::move(collapsed);
  dot_.clear();
  kernel_of_.clear();
  first_view_ = true;
  startLayout();
}

void GraphPanel::setFoldParameters(bool fold) {
  if (fold_params_ == fold) return;
  fold_params_ = fold;
  if (ctx_->session()) reload();
}

QString GraphPanel::legendText() const { return QTextDocumentFragment::fromHtml(legend_->text()).toPlainText(); }

QString GraphPanel::statusText() const { return status_->text(); }

void GraphPanel::startLayout() {
  quint64 gen = ++generation_;
  status_->setText(QString("laying out %1 nodes...").arg(dot_.empty() ? model_.nodes.size() : 0));
  modules_->setEnabled(dot_.empty() && !default_collapsed(model_, 0).empty());
  modules_->setText(collapsed_.empty() ? "Collapse modules" : "Expand modules");
  watcher_.setProperty("generation", QVariant::fromValue(gen));
  if (!dot_.empty()) {
    std::string dot = dot_;
    watcher_.setFuture(QtConcurrent::run(&pool_, [dot] { return graphviz_layout(dot); }));
    return;
  }
  GraphModel m = model_;
  std::set<std::string> c = collapsed_;
  watcher_.setFuture(QtConcurrent::run(&pool_, [m, c] { return layout_graph(m, c); }));
}

void GraphPanel::waitForLayout() {
  watcher_.waitForFinished();
  QCoreApplication::processEvents();
}

QGraphicsRectItem* GraphPanel::boxItem(const std::string& id) const {
  auto it = drawn_.boxes.find(id);
  return it == drawn_.boxes.end() ? nullptr : it->second;
}

void GraphPanel::build(const GraphLayout& layout) {
  scene_->clear();
  drawn_ = {};
  if (!layout.error.empty()) {
    std::string listing = dot_;
    for (const auto& n : model_.nodes) listing += n.name + " = " + n.target + "  " + n.shape + "\n";
    showText(QString::fromStdString(layout.error + "\n\n" + listing), QString::fromStdString(layout.error));
    return;
  }
  pages_->setCurrentWidget(view_);
  members_.clear();
  for (const auto& n : model_.nodes) {
    std::string box = box_of(n, collapsed_);
    if (box != n.name) ++members_[box];
  }
  drawn_ = draw_graph(*scene_, layout, model_, members_, font());
  // Graph breaks: where this region ends, a marker under its output.
  const Selection& sel = ctx_->current();
  int breaks = 0;
  if (sel.session)
    if (const auto* r = find_region(*sel.session, sel.compile_id))
      for (const auto& br : sel.session->breaks)
        if (br.info.ends_region >= 0 && br.info.ends_region == r->region) {
          std::string text = "graph break " + br.info.id + ": " + br.info.reason;
          if (br.info.loc.line > 0)
            text += "\n" + (br.info.loc.file.empty() ? std::string("line") : br.info.loc.file + ":") +
                    std::to_string(br.info.loc.line);
          QRectF anchor = drawn_.output.isNull() ? QRectF(0, layout.height, layout.width, 0) : drawn_.output;
          auto* label = new QGraphicsSimpleTextItem(QString::fromStdString(text));
          label->setBrush(QColor(160, 20, 20));
          QRectF tr = label->boundingRect();
          QRectF box(anchor.center().x() - tr.width() / 2 - 6, anchor.bottom() + 24 + breaks * (tr.height() + 24),
                     tr.width() + 12, tr.height() + 8);
          scene_->addLine(QLineF(anchor.center().x(), anchor.bottom(), anchor.center().x(), box.top()),
                          QPen(QColor(190, 30, 30), 1.5, Qt::DashLine));
          auto* marker = scene_->addRect(box, QPen(QColor(190, 30, 30), 1.5), QBrush(QColor(253, 236, 234)));
          marker->setToolTip(QString::fromStdString(text));
          label->setParentItem(marker);
          label->setPos(box.left() + 6, box.top() + 4);
          ++breaks;
        }
  status_->setText(QString("%1%2 · %3 boxes%4%5 · wheel or +/- zoom, drag pans, F fits, double-click a module")
                       .arg(dot_.empty() ? QString("%1 nodes").arg(model_.nodes.size()) : QString("DOT graph"))
                       .arg(model_.folded.empty() ? QString()
                                                  : QString(" (+%1 parameters folded into their users)").arg(model_.folded.size()))
                       .arg(layout.boxes.size())
                       .arg(collapsed_.empty() ? QString() : QString(", %1 collapsed modules").arg(collapsed_.size()))
                       .arg(breaks ? QString(", %1 graph break(s)").arg(breaks) : QString()));
  scene_->setSceneRect(scene_->itemsBoundingRect().adjusted(-20, -20, 20, 20));
  if (first_view_) {
    first_view_ = false;
    showInputs();
  } else {
    fit();
  }
  applyHighlight();
  if (!pending_.empty()) {
    std::string node = pending_;
    pending_.clear();
    selectFound(node);
  }
}

std::set<std::string> GraphPanel::highlighted() const {
  std::set<std::string> out;
  for (const auto& [id, item] : drawn_.boxes)
    if (item->pen().widthF() >= 3) out.insert(id);
  return out;
}

std::set<std::string> GraphPanel::externNodes() const {
  std::set<std::string> out;
  for (const auto& [id, item] : drawn_.boxes)
    if (item->pen().style() == Qt::DashLine && model_.index.count(id)) out.insert(id);
  return out;
}

QString GraphPanel::detailText(const std::string& node) const {
  auto it = drawn_.details.find(node);
  return it == drawn_.details.end() ? QString() : it->second->text();
}

void GraphPanel::applyHighlight() {
  const Selection& sel = ctx_->current();
  const session::Kernel* k = sel.session && !sel.kernel.empty() ? find_kernel(*sel.session, sel.kernel, sel.compile_id) : nullptr;
  std::set<std::string> lit;
  if (k && k->compile_id == sel.compile_id)
    for (const auto& n : k->nodes) lit.insert(n);
  // A collapsed module lights up when one of its nodes does.
  std::set<std::string> lit_boxes;
  for (const auto& n : lit) {
    auto it = model_.index.find(n);
    lit_boxes.insert(it == model_.index.end() ? n : box_of(model_.nodes[it->second], collapsed_));
  }
  if (!sel.node.empty()) {
    auto it = model_.index.find(sel.node);
    lit_boxes.insert(it == model_.index.end() ? sel.node : box_of(model_.nodes[it->second], collapsed_));
  }
  // Cost overlay: the selected run's time per kernel (device lanes when the run has them); when the
  // selected run has none here (an eager run), the first run that has.
  std::map<std::string, double> cost;
  int run = -1;
  if (sel.session && sel.run >= 0) {
    run = timed_run(*sel.session, sel.run, sel.compile_id);
    if (run >= 0) cost = kernel_time_ns(*sel.session, run, sel.compile_id);
  }
  double max_cost = 0;
  for (const auto& [name, ns] : cost) max_cost = std::max(max_cost, ns);
  // Collapsed modules: their nodes' share of the region's time.
  const auto node_ns = node_time_ns(model_, kernel_of_, cost);
  const auto share = box_time_share(model_, collapsed_, node_ns);
  double max_share = 0;
  for (const auto& [box, f] : share)
    if (box.rfind("module:", 0) == 0) max_share = std::max(max_share, f);
  updateLegend(run, !cost.empty(), max_share > 0);
  // A comparison colours by B's time against A's instead (graph_compare.h).
  std::map<std::string, BoxTimeChange> change;
  if (sel.compare && sel.compare->diff) change = box_time_change(model_, collapsed_, sel.compare->diff->structure);
  // Only Kiln's own sessions account for every computation in their kernels; an imported run's
  // kernels name a subset of nodes, so the rest are not marked.
  const bool region_has_kernels =
      !kernel_of_.empty() && sel.session && sel.session->origin.find("import") == std::string::npos;
  for (auto& [id, item] : drawn_.boxes) {
    auto kit = kernel_of_.find(id);
    std::string kernel = kit == kernel_of_.end() ? "" : kit->second;
    auto nit = model_.index.find(id);
    const GraphNode* node = nit == model_.index.end() ? nullptr : &model_.nodes[nit->second];
    // A tensor op outside every generated kernel runs as an extern call (GEMM, conv) or a fallback;
    // scalar and shape arithmetic runs on the host and is not marked.
    bool external = node && node->op == "call_function" && node->tensor && kernel.empty() && region_has_kernels;
    QColor fill = id.rfind("module:", 0) == 0 ? QColor(222, 228, 246)
                  : external                  ? QColor(255, 255, 255)
                                              : kernel_colour(kernel);
    QString detail;  // the time first: it survives eliding in narrow boxes
    if (!kernel.empty()) detail = QString::fromStdString(kernel);
    else if (external) detail = "extern / fallback call";
    auto c = cost.find(kernel);
    if (!kernel.empty() && c != cost.end() && max_cost > 0) {
      fill = time_tint(c->second / max_cost);
      detail = QString::fromStdString(us_text(c->second) + " · " + kernel);
    }
    if (id.rfind("module:", 0) == 0) {
      auto m = members_.find(id);
      const int count = m == members_.end() ? 0 : m->second;
      detail = QString(count == 1 ? "%1 node" : "%1 nodes").arg(count);
      auto f = share.find(id);
      if (f != share.end() && max_share > 0) {
        fill = time_tint(f->second / max_share);
        detail += QString(" · %1% of time").arg(100 * f->second, 0, 'f', f->second < 0.1 ? 1 : 0);
      } else {
        detail += " (double-click)";
      }
    } else if (external && node) {
      auto t = node_ns.find(node->name);
      if (t != node_ns.end()) detail = QString::fromStdString("~" + us_text(t->second) + " · extern call");
    }
    if (sel.compare && sel.compare->diff) {
      auto ch = change.find(id);
      if (ch != change.end()) {
        const auto& c = ch->second;
        fill = c.a_ms >= 0 && c.b_ms >= 0 ? change_tint(time_change_tone(c.a_ms, c.b_ms)) : QColor(214, 214, 220);
        detail = change_detail(c);
      } else if (node && node->op == "call_function") {
        fill = QColor(245, 245, 247);  // no kernel time: scalar arithmetic, or no module time on either side
        detail = node->tensor ? "no module time" : "no kernel time";
      }
    }
    item->setBrush(fill);
    if (auto d = drawn_.details.find(id); d != drawn_.details.end())
      set_elided_text(d->second, detail, item->rect().width() - 8);
    QPen pen = id.rfind("module:", 0) == 0 ? QPen(QColor(90, 100, 160), 1.5) : QPen(QColor(90, 96, 110), 1);
    if (external) pen = QPen(QColor(170, 60, 40), 1.5, Qt::DashLine);
    if (lit_boxes.count(id)) pen = QPen(QColor(230, 120, 0), 3, pen.style());
    item->setPen(pen);
    item->setZValue(lit_boxes.count(id) ? 2 : 0);
  }
  if (!lit_boxes.empty()) {
    std::string first;
    if (!sel.node.empty()) {
      auto it = model_.index.find(sel.node);
      first = it == model_.index.end() ? sel.node : box_of(model_.nodes[it->second], collapsed_);
    }
    if (!drawn_.boxes.count(first)) first.clear();
    for (const auto& b : lit_boxes)
      if (first.empty() && drawn_.boxes.count(b)) first = b;
    if (!first.empty()) view_->centerOn(drawn_.boxes[first]);
  }
}

void GraphPanel::updateLegend(int run, bool kernels_tinted, bool modules_tinted) {
  const Selection& sel = ctx_->current();
  if (sel.compare && sel.compare->diff) {
    QString swatches;
    for (double t : {-1.0, -0.5, 0.0, 0.5, 1.0})
      swatches += QString("<span style=\"background-color:%1\">&nbsp;&nbsp;&nbsp;</span>").arg(change_tint(t).name());
    legend_->setText(QString("B 2x faster ") + swatches +
                     " B 2x slower &nbsp; <span style=\"background-color:#d6d6dc\">&nbsp;&nbsp;&nbsp;</span> one side "
                     "only &nbsp;·&nbsp; kernel time of each node's module, A → B ms per iteration");
    legend_->setToolTip(
        "Compared with another session: each node is coloured by the kernel time of its nn.Module (the module's own\n"
        "kernels, per iteration) in B against A, a collapsed module by its time with its submodules; the time by\n"
        "module of the comparison panel. Nodes of one module share its colour.");
    return;
  }
  if (!kernels_tinted || !sel.session) {
    legend_->clear();
    return;
  }
  QString name = QString("run %1").arg(run);
  for (const auto& r : sel.session->runs)
    if (r.id == run) name += QString::fromStdString(" (" + r.mode + ", " + r.backend + ")");
  QString text = QString(modules_tinted ? "tint: share of module and kernel time in %1" : "tint: kernel time in %1").arg(name);
  if (run != sel.run) text += " (the selected run has no kernel times in this region)";
  QString swatches;
  for (double f : {0.1, 0.5, 1.0})
    swatches += QString("<span style=\"background-color:%1\">&nbsp;&nbsp;&nbsp;</span>").arg(time_tint(f).name());
  legend_->setText(swatches + "&nbsp;" + text.toHtmlEscaped());
  legend_->setToolTip(
      "Nodes: the time of the kernel they went into; warmest is slowest.\n"
      "Collapsed modules: the share of this region's kernel and extern time spent in their nodes\n"
      "(a kernel's time is split evenly over its nodes, an extern op's over its calls).");
}

void GraphPanel::toggle(const std::string& box) {
  if (box.rfind("module:", 0) == 0) collapsed_.erase(box.substr(7));
  else if (box.rfind("cluster:", 0) == 0) collapsed_.insert(box.substr(8));
  else return;
  startLayout();
}

void GraphPanel::search() { find(find_->text()); }

void GraphPanel::find(const QString& text) {
  std::string q = text.trimmed().toStdString();
  if (q.empty()) return;
  auto matches = [&](const GraphNode& n) {
    return n.name.find(q) != std::string::npos || n.target.find(q) != std::string::npos;
  };
  // The next match after the last one, wrapping around.
  const int count = static_cast<int>(model_.nodes.size());
  int from = 0;
  if (found_for_ != q) found_.clear();
  found_for_ = q;
  if (auto it = model_.index.find(found_); it != model_.index.end()) from = it->second + 1;
  for (int k = 0; k < count; ++k) {
    const auto& n = model_.nodes[(from + k) % count];
    if (!matches(n)) continue;
    found_ = n.name;
    std::string box = box_of(n, collapsed_);
    if (box != n.name) {  // inside a collapsed module: expand it, select once drawn
      for (auto it = collapsed_.begin(); it != collapsed_.end();)
        it = n.module == *it || n.module.rfind(*it + ".", 0) == 0 ? collapsed_.erase(it) : std::next(it);
      pending_ = n.name;
      startLayout();
      return;
    }
    selectFound(n.name);
    return;
  }
  // DOT-only graphs: match box ids and labels.
  for (const auto& [id, item] : drawn_.boxes)
    if (model_.nodes.empty() && id.find(q) != std::string::npos) {
      selectFound(id);
      return;
    }
  status_->setText(QString::fromStdString("no node or op matches '" + q + "'"));
}

void GraphPanel::selectFound(const std::string& node) {
  ctx_->selectNode(ctx_->current().compile_id, node);
  if (auto* item = boxItem(node)) {
    if (view_->transform().m11() < 0.8) view_->setTransform(QTransform::fromScale(1, 1));
    view_->centerOn(item);
  }
}

void GraphPanel::showInputs() {
  fit();
  if (view_->transform().m11() >= 0.6) return;  // the whole graph fits at a readable scale
  // Too big to read whole: a readable scale, the inputs (placeholders) at the top left of the view.
  const double s = 0.9;
  view_->setTransform(QTransform::fromScale(s, s));
  QRectF inputs;
  for (const auto& n : model_.nodes)
    if (n.op == "placeholder")
      if (auto* item = boxItem(box_of(n, collapsed_))) inputs |= item->rect();
  QRectF all = scene_->itemsBoundingRect();
  if (inputs.isNull()) inputs = QRectF(all.left(), all.top(), all.width(), 1);
  const double w = view_->viewport()->width() / s, h = view_->viewport()->height() / s;
  double x = inputs.width() <= w - 40 ? inputs.center().x() : inputs.left() - 20 + w / 2;
  view_->centerOn(x, inputs.top() - 30 + h / 2);
}

void GraphPanel::fit() {
  if (!scene_->items().isEmpty()) view_->fitInView(scene_->itemsBoundingRect(), Qt::KeepAspectRatio);
  // Never blow a small graph up past its natural size.
  if (view_->transform().m11() > 1.5) view_->setTransform(QTransform::fromScale(1.5, 1.5));
}

}  // namespace kiln::viewers
