#include "viewers/graph/graph_items.h"

#include <QFontMetricsF>
#include <QPainterPath>
#include <QPen>
#include <cmath>

namespace kiln::viewers {

namespace {

QPointF at(const GraphPoint& p) { return {p.first, p.second}; }

void draw_edge(QGraphicsScene& scene, const LaidOutEdge& e, const QPen& pen) {
  if (e.points.size() < 2) return;
  QPainterPath path(at(e.points[0]));
  size_t i = 1;
  for (; i + 2 < e.points.size(); i += 3)
    path.cubicTo(at(e.points[i]), at(e.points[i + 1]), at(e.points[i + 2]));
  for (; i < e.points.size(); ++i) path.lineTo(at(e.points[i]));
  scene.addPath(path, pen)->setZValue(-1);
  // Arrow head: from the spline's end to Graphviz's tip (or along the last segment).
  QPointF end = at(e.points.back());
  QPointF tip = e.has_tip ? at(e.tip) : end;
  QPointF from = e.has_tip ? end : at(e.points[e.points.size() - 2]);
  QPointF d = tip - from;
  double len = std::hypot(d.x(), d.y());
  if (len < 1e-6) return;
  d /= len;
  if (!e.has_tip) from = tip - d * 7.0;
  QPointF n(-d.y(), d.x());
  QPolygonF head;
  head << tip << from + n * 3.5 << from - n * 3.5;
  scene.addPolygon(head, pen, QBrush(pen.color()))->setZValue(-1);
}

QString dot_label_text(const std::string& label) {
  // DOT line breaks: \n, \l, \r.
  QString s = QString::fromStdString(label);
  s.replace("\\n", "\n").replace("\\l", "\n").replace("\\r", "\n");
  return s.trimmed();
}

}  // namespace

QString graph_box_id(const QGraphicsItem* item) {
  for (; item; item = item->parentItem())
    if (item->data(kGraphIdRole).isValid()) return item->data(kGraphIdRole).toString();
  return {};
}

void set_elided_text(QGraphicsSimpleTextItem* item, const QString& text, double width) {
  QFontMetricsF fm(item->font());
  item->setText(fm.elidedText(text, Qt::ElideRight, width));
  if (item->text() != text) item->setToolTip(text);
}

DrawnGraph draw_graph(QGraphicsScene& scene, const GraphLayout& layout, const GraphModel& model,
                      const std::map<std::string, int>& members, const QFont& font) {
  DrawnGraph out;
  QFont small = font;
  small.setPointSizeF(font.pointSizeF() * 0.85);
  QFont bold = small;
  bold.setBold(true);
  const double line = QFontMetricsF(small).height();

  // Expanded module clusters (Graphviz's boxes): nested tints, path label at the top left.
  for (const auto& c : layout.clusters) {
    auto* r = scene.addRect(QRectF(c.x, c.y, c.w, c.h), QPen(QColor(150, 160, 190), 1, Qt::DashLine),
                            QBrush(QColor(120, 140, 200, 22)));
    r->setZValue(-10 + c.depth);
    r->setData(kGraphIdRole, QString::fromStdString("cluster:" + c.name));
    r->setToolTip(QString::fromStdString("module " + c.name + "\ndouble-click to collapse"));
    auto* label = new QGraphicsSimpleTextItem(r);
    label->setFont(small);
    label->setBrush(QColor(80, 90, 130));
    set_elided_text(label, QString::fromStdString(c.label.empty() ? c.name : c.label), std::max(20.0, c.w - 8));
    label->setPos(c.x + 4, c.y + 2);
  }

  QPen edge_pen(QColor(120, 128, 140), 1.0);
  for (const auto& e : layout.edges) draw_edge(scene, e, edge_pen);

  for (const auto& b : layout.boxes) {
    auto* item = scene.addRect(QRectF(b.x, b.y, b.w, b.h), QPen(QColor(90, 96, 110), 1), QBrush(QColor(236, 239, 243)));
    item->setData(kGraphIdRole, QString::fromStdString(b.id));
    const double text_w = b.w - 8;
    auto text = [&](const QString& s, double y, const QFont& f, QColor colour) {
      auto* t = new QGraphicsSimpleTextItem(item);
      t->setFont(f);
      t->setBrush(colour);
      set_elided_text(t, s, text_w);
      t->setPos(b.x + 4, y);
      return t;
    };
    auto idx = model.index.find(b.id);
    if (idx != model.index.end()) {
      const auto& n = model.nodes[idx->second];
      bool call = n.op == "call_function" || n.op == "call_method" || n.op == "call_module";
      const std::string params = params_text(n);
      const int lines = params.empty() ? 3 : 4;
      double top = b.y + (b.h - lines * line) / 2;
      text(QString::fromStdString(call ? n.target : n.op), top, bold, QColor(20, 20, 30));
      text(QString::fromStdString(n.name + (n.shape.empty() ? "" : "  " + n.shape)), top + line, small, QColor(60, 60, 70));
      if (!params.empty()) text(QString::fromStdString(params), top + 2 * line, small, QColor(40, 100, 70));
      out.details[b.id] = text("", top + (lines - 1) * line, small, QColor(150, 40, 20));
      std::string tip = n.name + " = " + n.target + (n.shape.empty() ? "" : "\n" + n.shape) +
                        (n.module.empty() ? "" : "\nmodule " + n.module);
      for (const auto& p : n.params) tip += "\nparameter " + p;
      item->setToolTip(QString::fromStdString(tip));
      if (n.op == "output") out.output = item->rect();
    } else if (b.id.rfind("module:", 0) == 0) {
      auto m = members.find(b.id);
      int count = m == members.end() ? 0 : m->second;
      double top = b.y + (b.h - 2 * line) / 2;
      text(QString::fromStdString(b.id.substr(7)), top, bold, QColor(30, 40, 90));
      out.details[b.id] = text(QString(count == 1 ? "%1 node (double-click)" : "%1 nodes (double-click)").arg(count), top + line, small, QColor(60, 70, 110));
      item->setBrush(QColor(222, 228, 246));
      item->setPen(QPen(QColor(90, 100, 160), 1.5));
      item->setToolTip(QString::fromStdString("module " + b.id.substr(7) + " collapsed (" + std::to_string(count) + " nodes)"));
    } else {  // a node of a DOT-only graph: its own label
      QString label = dot_label_text(b.label.empty() ? b.id : b.label);
      QStringList lines = label.split('\n');
      double top = b.y + (b.h - static_cast<double>(lines.size()) * line) / 2;
      for (int i = 0; i < lines.size(); ++i) text(lines[i], top + i * line, i ? small : bold, QColor(30, 30, 40));
      item->setToolTip(label);
      if (b.id == "output" || label.startsWith("output")) out.output = item->rect();
    }
    out.boxes[b.id] = item;
  }
  return out;
}

}  // namespace kiln::viewers
