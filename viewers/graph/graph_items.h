// Draws a laid-out graph into a QGraphicsScene: module clusters behind, edges with arrow heads,
// one box per node (op, shape, folded parameters, and a detail line the panel fills with kernel
// and time) or per collapsed module (its path, and a line with its node count and time share).
// Graphs that came only as DOT are drawn with the labels their DOT gives. Boxes carry their id in
// data(kGraphIdRole): a node name, "module:<path>" for a collapsed module, "cluster:<path>" for an
// expanded one.
#pragma once

#include <QFont>
#include <QGraphicsRectItem>
#include <QGraphicsScene>
#include <QGraphicsSimpleTextItem>
#include <map>
#include <string>

#include "viewers/graph/graph_model.h"

namespace kiln::viewers {

inline constexpr int kGraphIdRole = 0;

struct DrawnGraph {
  std::map<std::string, QGraphicsRectItem*> boxes;           // box id → its rectangle
  std::map<std::string, QGraphicsSimpleTextItem*> details;   // node or collapsed module → its last line
  QRectF output;                                             // the output node's box (null if none)
};

// `members`: node count per collapsed module ("module:<path>"); `model` may be empty (DOT graphs).
DrawnGraph draw_graph(QGraphicsScene& scene, const GraphLayout& layout, const GraphModel& model,
                      const std::map<std::string, int>& members, const QFont& font);

// The id of the box an item belongs to ("" for edges and background).
QString graph_box_id(const QGraphicsItem* item);

// Sets a text item to `text`, elided to `width` pixels of its font.
void set_elided_text(QGraphicsSimpleTextItem* item, const QString& text, double width);

}  // namespace kiln::viewers
