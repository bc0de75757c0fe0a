// The comparison of two sessions as one self-contained HTML page; see render_diff.h.
#include <algorithm>
#include <sstream>

#include "engine/report/html_text.h"
#include "engine/report/number_text.h"
#include "engine/report/render_diff.h"
#include "engine/report/render_diff_text.h"

namespace kiln::report {

namespace {

const char* kStyle = R"CSS(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1f2937;background:#f8fafc}
header{background:#111827;color:#f9fafb;padding:18px 28px}header h1{margin:0;font-size:20px}
header p{margin:4px 0 0;color:#cbd5e1}main{padding:8px 28px 40px;max-width:1400px}
section{background:#fff;border:1px solid #e5e7eb;border-radius:8px;padding:14px 18px;margin:16px 0}
h2{font-size:16px;margin:0 0 10px}h3{font-size:14px;margin:12px 0 6px}table{border-collapse:collapse;width:100%;font-size:13px}
th,td{text-align:left;padding:4px 8px;border-bottom:1px solid #eef2f7;vertical-align:top}
th{background:#f1f5f9;font-weight:600}td.num{text-align:right;font-variant-numeric:tabular-nums}
code{font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,monospace}.muted{color:#64748b}
.added{color:#b91c1c}.removed{color:#15803d}.bar{display:inline-block;height:8px;border-radius:2px;vertical-align:middle}
.bar-a{background:#93c5fd}.bar-b{background:#f59e0b}td.bars{width:22%}
)CSS";

std::string esc(const std::string& s) { return html_escape(s); }

std::string cell(const std::string& a, const std::string& b) { return diff_text::arrow(esc(a), esc(b)); }

std::string bar(const char* cls, double ms, double max_ms) {
  if (ms <= 0 || max_ms <= 0) return "";
  const int w = std::max(1, static_cast<int>(160.0 * ms / max_ms));
  return "<span class=\"bar " + std::string(cls) + "\" style=\"width:" + std::to_string(w) + "px\"></span>";
}

void runs(std::ostringstream& os, const SessionDiff& d) {
  os << "<section><h2>Runs</h2>";
  if (d.runs.empty()) {
    os << "<p class=muted>Neither side has measured runs.</p></section>";
    return;
  }
  os << "<p class=muted>Paired by mode and backend (then by mode); each cell reads A → B.</p><table><tr><th>run</th>"
        "<th>median ms</th><th>B vs A</th><th>compile cold / warm ms</th><th>kernels/iter</th><th>GPU busy</th>"
        "<th>peak memory</th><th>max rel error</th><th>status</th></tr>";
  for (const auto& p : d.runs) {
    auto v = diff_text::run_values(p);
    os << "<tr><td>" << esc(v.label) << "</td><td class=num>" << cell(v.median_a, v.median_b) << "</td><td class=num>"
       << esc(v.ratio) << "</td><td class=num>" << cell(v.compile_a, v.compile_b) << "</td><td class=num>"
       << cell(v.kernels_a, v.kernels_b) << "</td><td class=num>" << cell(v.busy_a, v.busy_b) << "</td><td class=num>"
       << cell(v.peak_a, v.peak_b) << "</td><td class=num>" << cell(v.error_a, v.error_b) << "</td><td>"
       << cell(diff_text::cut(v.status_a, 120), diff_text::cut(v.status_b, 120)) << "</td></tr>";
  }
  os << "</table></section>";
}

void structure_table(std::ostringstream& os, const std::vector<StructureLine>& rows, bool modules) {
  double max_ms = 0;
  for (const auto& l : rows) max_ms = std::max({max_ms, l.a_ms, l.b_ms});
  os << "<table><tr><th>" << (modules ? "module" : "line") << "</th>" << (modules ? "" : "<th>code</th>")
     << "<th>A ms/iter</th><th>B ms/iter</th><th>B − A ms</th><th></th></tr>";
  for (size_t i : diff_text::top_rows(rows, modules ? 400 : 100, modules)) {
    const auto& l = rows[i];
    std::string name = l.unattributed ? "<em>" + esc(kUnattributed) + "</em>"
                       : l.key.empty() && modules ? "<em>(model)</em>"
                                                  : "<code>" + esc(l.key) + "</code>";
    os << "<tr><td" << (modules ? " style=\"padding-left:" + std::to_string(8 + 14 * std::max(0, l.depth - 1)) + "px\"" : "")
       << ">" << name << "</td>";
    if (!modules) os << "<td><code>" << esc(diff_text::cut(l.code, 140)) << "</code></td>";
    os << "<td class=num>" << diff_text::ms_or_dash(l.a_ms) << "</td><td class=num>" << diff_text::ms_or_dash(l.b_ms)
       << "</td><td class=num>" << diff_text::delta(l.a_ms, l.b_ms) << "</td><td class=bars>"
       << bar("bar-a", l.a_ms, max_ms) << "<br>" << bar("bar-b", l.b_ms, max_ms) << "</td></tr>";
  }
  os << "</table>";
}

void structure(std::ostringstream& os, const SessionDiff& d) {
  const auto& s = d.structure;
  os << "<section><h2>Time by model structure</h2><ul>";
  os << "<li><b>A</b> " << esc(diff_text::side_summary(s.a)) << "</li>";
  os << "<li><b>B</b> " << esc(diff_text::side_summary(s.b)) << "</li></ul>";
  if (s.a.present || s.b.present) {
    os << "<h3>By module (inclusive: a module's own kernels and its submodules')</h3>";
    structure_table(os, s.modules, true);
    os << "<h3>By source line</h3><p class=muted>A kernel fused from several lines is shared among them in equal "
          "parts.</p>";
    structure_table(os, s.lines, false);
  }
  os << "</section>";
}

void breaks(std::ostringstream& os, const SessionDiff& d) {
  os << "<section><h2>Graph breaks</h2>";
  if (d.breaks.empty()) {
    os << "<p class=muted>No graph breaks on either side.</p></section>";
    return;
  }
  os << "<table><tr><th>change</th><th>line</th><th>reason</th><th>module</th><th>hits A → B</th></tr>";
  for (const auto& b : d.breaks) {
    std::string change = diff_text::change_name(b.change);
    os << "<tr><td class=\"" << change << "\">" << change << "</td><td><code>" << esc(b.where) << "</code></td><td>"
       << esc(diff_text::cut(b.reason, 300)) << "</td><td><code>" << esc(b.module) << "</code></td><td class=num>"
       << b.hits_a << " → " << b.hits_b << "</td></tr>";
  }
  os << "</table></section>";
}

void guard_items(std::ostringstream& os, const char* what, const char* cls, const std::vector<std::string>& guards) {
  for (const auto& g : guards) os << "<li class=" << cls << ">guard " << what << ": <code>" << esc(g) << "</code></li>";
}

void regions(std::ostringstream& os, const SessionDiff& d) {
  os << "<section><h2>Compiled regions</h2><p class=muted>" << d.regions.size() << " differ, " << d.regions_same
     << " the same (guards, recompile reason, op counts, input shapes).</p>";
  for (const auto& r : d.regions) {
    os << "<h3>" << esc(r.compile_id) << (r.in_a && r.in_b ? "" : r.in_a ? " (only in A)" : " (only in B)") << "</h3><ul>";
    if (!(r.in_a && r.in_b))
      os << "<li>graph: " << (r.in_a ? r.ops_a : r.ops_b) << " ops ("
         << esc(diff_text::or_dash(r.in_a ? r.graph_a : r.graph_b)) << "); guards " << (r.in_a ? r.guards_a : r.guards_b)
         << "</li>";
    if (r.in_a && r.in_b)
      os << "<li>graph: " << r.ops_a << " ops (" << esc(diff_text::or_dash(r.graph_a)) << ") → " << r.ops_b << " ops ("
         << esc(diff_text::or_dash(r.graph_b)) << "); guards " << r.guards_a << " → " << r.guards_b << "</li>";
    if (r.recompile_a != r.recompile_b)
      os << "<li>recompile reason: <code>" << esc(diff_text::or_dash(r.recompile_a)) << "</code> → <code>"
         << esc(diff_text::or_dash(r.recompile_b)) << "</code></li>";
    guard_items(os, "added", "added", r.guards_added);
    guard_items(os, "removed", "removed", r.guards_removed);
    if (!r.ops.empty()) {
      os << "<li>ops:";
      for (const auto& o : r.ops) os << " <code>" << esc(o.op) << "</code> " << o.a << " → " << o.b << ";";
      os << "</li>";
    }
    for (const auto& in : r.inputs)
      os << "<li>input <code>" << esc(in.name) << "</code>: <code>" << esc(diff_text::or_dash(in.a)) << "</code> → <code>"
         << esc(diff_text::or_dash(in.b)) << "</code></li>";
    os << "</ul>";
  }
  os << "</section>";
}

}  // namespace

std::string render_diff_html(const SessionDiff& d) {
  std::ostringstream os;
  // Sessions and logs come from other people: no script, frame, form or remote load runs here.
  os << "<!DOCTYPE html><html lang=en><head><meta charset=utf-8>"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
        "img-src data:; script-src 'none'; object-src 'none'; base-uri 'none'; form-action 'none'\">"
        "<title>Kiln diff: "
     << esc(d.a.label) << " → " << esc(d.b.label) << "</title><style>" << kStyle
     << "</style></head><body><header><h1>Kiln diff</h1><p>A: " << esc(d.a.label) << " &middot; " << esc(d.a.origin)
     << "<br>B: " << esc(d.b.label) << " &middot; " << esc(d.b.origin) << "</p></header><main>";
  os << "<section><h2>Sides</h2><table><tr><th></th><th>A</th><th>B</th></tr>"
     << "<tr><th>model</th><td><code>" << esc(d.a.model) << "</code></td><td><code>" << esc(d.b.model) << "</code></td></tr>"
     << "<tr><th>torch</th><td>" << esc(d.a.torch_version) << "</td><td>" << esc(d.b.torch_version) << "</td></tr>"
     << "<tr><th>device</th><td>" << esc(diff_text::or_dash(d.a.device)) << "</td><td>" << esc(diff_text::or_dash(d.b.device)) << "</td></tr></table></section>";
  runs(os, d);
  structure(os, d);
  breaks(os, d);
  regions(os, d);
  os << "</main></body></html>\n";
  return os.str();
}

}  // namespace kiln::report
