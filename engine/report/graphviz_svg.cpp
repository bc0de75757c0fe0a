// Graphviz behind plain strings; see graphviz_svg.h.
#include "engine/report/graphviz_svg.h"

#include <mutex>

#include "engine/report/svg_sanitize.h"

#ifdef KILN_HAVE_GRAPHVIZ
#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>
#endif

namespace kiln::report {

std::mutex& graphviz_mutex() {
  static std::mutex m;
  return m;
}

#ifdef KILN_HAVE_GRAPHVIZ

namespace {

std::string* captured_errors = nullptr;  // guarded by graphviz_mutex()

int capture_error(char* text) {
  if (captured_errors && text) *captured_errors += text;
  return 0;
}

// Attributes through which DOT reaches files or emits links; cleared on every object.
const char* const kInertAttributes[] = {"URL", "href", "image", "imagepath", "shapefile", "stylesheet",
                                        "fontpath", "edgeURL", "edgehref", "headURL", "headhref", "tailURL",
                                        "tailhref", "labelURL", "labelhref"};

void clear_attributes(Agraph_t* root, int kind, void* object) {
  for (const char* name : kInertAttributes) {
    Agsym_t* sym = agattr(root, kind, const_cast<char*>(name), nullptr);
    if (sym) agxset(object, sym, const_cast<char*>(""));
  }
}

// Labels that may hold HTML-like markup (tables with HREF, IMG SRC that reads files).
const char* const kLabelAttributes[] = {"label", "xlabel", "headlabel", "taillabel"};

// The text of an HTML-like label, its tags dropped: Graphviz copies some tag attributes into its
// output unescaped, so Kiln never hands it markup from a session.
std::string markup_text(const char* html) {
  std::string out;
  bool in_tag = false;
  for (const char* p = html; *p; ++p) {
    if (*p == '<') in_tag = true;
    else if (*p == '>') in_tag = false, out += ' ';
    else if (!in_tag) out += *p;
  }
  std::string collapsed;
  for (char c : out)
    if (!(c == ' ' && (collapsed.empty() || collapsed.back() == ' '))) collapsed += c;
  while (!collapsed.empty() && collapsed.back() == ' ') collapsed.pop_back();
  return collapsed;
}

void plain_labels(Agraph_t* root, int kind, void* object) {
  for (const char* name : kLabelAttributes) {
    Agsym_t* sym = agattr(root, kind, const_cast<char*>(name), nullptr);
    if (!sym) continue;
    char* value = agxget(object, sym);
    if (value && aghtmlstr(value)) agxset(object, sym, const_cast<char*>(markup_text(value).c_str()));
  }
}

void plain_label_defaults(Agraph_t* root) {
  for (int kind : {AGRAPH, AGNODE, AGEDGE})
    for (const char* name : kLabelAttributes) {
      Agsym_t* sym = agattr(root, kind, const_cast<char*>(name), nullptr);
      if (sym && sym->defval && aghtmlstr(sym->defval))
        agattr(root, kind, const_cast<char*>(name), const_cast<char*>(markup_text(sym->defval).c_str()));
    }
}

void make_inert(Agraph_t* root, Agraph_t* g) {
  clear_attributes(root, AGRAPH, g);
  plain_labels(root, AGRAPH, g);
  for (Agraph_t* sub = agfstsubg(g); sub; sub = agnxtsubg(sub)) make_inert(root, sub);
}

// One context for the process: loading Graphviz's plugins is the slow part of a call.
GVC_t* context() {
  static GVC_t* gvc = gvContext();
  return gvc;
}

std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

}  // namespace

bool graphviz_available() { return true; }

namespace {

// Lays out `dot` and renders it in `format` ("svg", "plain"); max_nodes bounds the work.
SvgResult render(const std::string& dot, const char* format, int max_nodes) {
  std::lock_guard<std::mutex> lock(graphviz_mutex());
  std::string errors;
  captured_errors = &errors;
  agusererrf previous = agseterrf(capture_error);
  agerrlevel_t previous_level = agseterr(AGERR);
  auto restore = [&] {
    agseterrf(previous);
    agseterr(previous_level);
    captured_errors = nullptr;
  };

  SvgResult result;
  Agraph_t* g = agmemread(dot.c_str());
  if (!g) {
    restore();
    result.error = "DOT does not parse" + (errors.empty() ? std::string() : ": " + one_line(errors));
    return result;
  }
  int nodes = agnnodes(g);
  if (nodes > max_nodes) {
    agclose(g);
    restore();
    result.error = "graph too large to draw (" + std::to_string(nodes) + " nodes)";
    return result;
  }
  plain_label_defaults(g);
  make_inert(g, g);
  for (Agnode_t* n = agfstnode(g); n; n = agnxtnode(g, n)) {
    clear_attributes(g, AGNODE, n);
    plain_labels(g, AGNODE, n);
    for (Agedge_t* e = agfstout(g, n); e; e = agnxtout(g, e)) {
      clear_attributes(g, AGEDGE, e);
      plain_labels(g, AGEDGE, e);
    }
  }

  GVC_t* gvc = context();
  char* data = nullptr;
  unsigned int length = 0;
  if (gvLayout(gvc, g, "dot") != 0) {
    result.error = "Graphviz layout failed" + (errors.empty() ? std::string() : ": " + one_line(errors));
  } else {
    if (gvRenderData(gvc, g, format, &data, &length) == 0 && data) {
      std::string text(data, length);
      if (std::string(format) != "svg") {
        result.svg = text;
      } else {
        auto start = text.find("<svg");
        if (start == std::string::npos) result.error = "Graphviz wrote no <svg> element";
        else result.svg = sanitize_svg(text.substr(start));
      }
    } else {
      result.error = std::string("Graphviz ") + format + " rendering failed" +
                     (errors.empty() ? std::string() : ": " + one_line(errors));
    }
    if (data) gvFreeRenderData(data);
    gvFreeLayout(gvc, g);
  }
  agclose(g);
  restore();
  return result;
}

}  // namespace

SvgResult dot_to_svg(const std::string& dot) { return render(dot, "svg", kMaxDrawnNodes); }

#else

bool graphviz_available() { return false; }

SvgResult dot_to_svg(const std::string&) { return {"", "Graphviz is not built in"}; }

#endif

}  // namespace kiln::report
