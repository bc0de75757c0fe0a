// Graphviz behind plain values; see graphviz_layout.h.
#include "viewers/graph/graphviz_layout.h"

#include <mutex>

#include "engine/api/report.h"

#ifdef KILN_HAVE_GRAPHVIZ
#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>
#endif

namespace kiln::viewers {

#ifdef KILN_HAVE_GRAPHVIZ

namespace {

std::string* captured_errors = nullptr;  // guarded by report::graphviz_mutex()

int capture_error(char* text) {
  if (captured_errors && text) *captured_errors += text;
  return 0;
}

std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

// Attributes through which DOT makes Graphviz read files while sizing nodes; cleared everywhere.
const char* const kFileAttributes[] = {"image", "imagepath", "shapefile", "fontpath", "stylesheet"};

void clear_file_attributes(Agraph_t* root, int kind, void* object) {
  for (const char* name : kFileAttributes)
    if (Agsym_t* sym = agattr(root, kind, const_cast<char*>(name), nullptr)) agxset(object, sym, const_cast<char*>(""));
}

void clear_graph_attributes(Agraph_t* root, Agraph_t* g) {
  clear_file_attributes(root, AGRAPH, g);
  for (Agraph_t* sub = agfstsubg(g); sub; sub = agnxtsubg(sub)) clear_graph_attributes(root, sub);
}

// One context for the process's viewers: loading Graphviz's plugins is the slow part of a call.
GVC_t* context() {
  static GVC_t* gvc = gvContext();
  return gvc;
}

std::string attribute(void* object, const char* name) {
  const char* v = agget(object, const_cast<char*>(name));
  return v ? v : "";
}

struct Flip {  // Graphviz's points (y up, origin at the bounding box's lower left) → y down
  boxf bb;
  GraphPoint operator()(pointf p) const { return {p.x - bb.LL.x, bb.UR.y - p.y}; }
};

void read_clusters(Agraph_t* g, int depth, const Flip& flip, std::vector<LaidOutCluster>& out) {
  for (int i = 1; i <= GD_n_cluster(g); ++i) {
    Agraph_t* sub = GD_clust(g)[i];
    LaidOutCluster c;
    c.name = agnameof(sub);
    if (c.name.rfind("cluster", 0) == 0) c.name = c.name.substr(7);
    if (!c.name.empty() && c.name[0] == '_') c.name = c.name.substr(1);
    c.label = attribute(sub, "label");
    c.depth = depth;
    boxf bb = GD_bb(sub);
    auto top_left = flip({bb.LL.x, bb.UR.y});
    c.x = top_left.first;
    c.y = top_left.second;
    c.w = bb.UR.x - bb.LL.x;
    c.h = bb.UR.y - bb.LL.y;
    out.push_back(std::move(c));
    read_clusters(sub, depth + 1, flip, out);
  }
}

GraphvizLayout read_layout(Agraph_t* g) {
  GraphvizLayout out;
  Flip flip{GD_bb(g)};
  out.width = flip.bb.UR.x - flip.bb.LL.x;
  out.height = flip.bb.UR.y - flip.bb.LL.y;
  for (Agnode_t* n = agfstnode(g); n; n = agnxtnode(g, n)) {
    LaidOutBox b;
    b.id = agnameof(n);
    b.label = attribute(n, "label");
    if (b.label == "\\N") b.label = b.id;
    b.w = ND_width(n) * 72.0;
    b.h = ND_height(n) * 72.0;
    auto c = flip(ND_coord(n));
    b.x = c.first - b.w / 2;
    b.y = c.second - b.h / 2;
    out.boxes.push_back(std::move(b));
    for (Agedge_t* e = agfstout(g, n); e; e = agnxtout(g, e)) {
      LaidOutEdge le;
      le.from = agnameof(agtail(e));
      le.to = agnameof(aghead(e));
      if (const splines* spl = ED_spl(e))
        for (int i = 0; i < spl->size; ++i) {
          const bezier& bz = spl->list[i];
          for (int k = 0; k < bz.size; ++k) le.points.push_back(flip(bz.list[k]));
          if (bz.eflag) {
            le.has_tip = true;
            le.tip = flip(bz.ep);
          }
        }
      out.edges.push_back(std::move(le));
    }
  }
  read_clusters(g, 0, flip, out.clusters);
  return out;
}

}  // namespace

GraphvizLayout graphviz_layout(const std::string& dot, int max_nodes) {
  std::lock_guard<std::mutex> lock(report::graphviz_mutex());
  std::string errors;
  captured_errors = &errors;
  agusererrf previous = agseterrf(capture_error);
  agerrlevel_t previous_level = agseterr(AGERR);
  GraphvizLayout out;
  Agraph_t* g = agmemread(dot.c_str());
  if (!g) {
    out.error = "DOT does not parse" + (errors.empty() ? std::string() : ": " + one_line(errors));
  } else if (agnnodes(g) > max_nodes) {
    out.error = "graph too large to lay out (" + std::to_string(agnnodes(g)) + " nodes)";
    agclose(g);
  } else {
    clear_graph_attributes(g, g);
    for (Agnode_t* n = agfstnode(g); n; n = agnxtnode(g, n)) clear_file_attributes(g, AGNODE, n);
    GVC_t* gvc = context();
    if (gvLayout(gvc, g, "dot") != 0) {
      out.error = "Graphviz layout failed" + (errors.empty() ? std::string() : ": " + one_line(errors));
    } else {
      out = read_layout(g);
      gvFreeLayout(gvc, g);
    }
    agclose(g);
  }
  agseterrf(previous);
  agseterr(previous_level);
  captured_errors = nullptr;
  return out;
}

#else

GraphvizLayout graphviz_layout(const std::string&, int) {
  GraphvizLayout out;
  out.error = "Graphviz is not built in";
  return out;
}

#endif

}  // namespace kiln::viewers
