// The comparison of two sessions as GitHub Markdown; see render_diff.h.
#include <algorithm>
#include <sstream>

#include "engine/report/markdown_text.h"
#include "engine/report/number_text.h"
#include "engine/report/render_diff.h"
#include "engine/report/render_diff_text.h"

namespace kiln::report {

namespace {

using markdown::code;
using markdown::md;

constexpr size_t kMaxModules = 80;
constexpr size_t kMaxLines = 30;
constexpr size_t kMaxBreaks = 40;
constexpr size_t kMaxRegions = 30;
constexpr size_t kMaxGuards = 12;

// Table cells drop leading spaces: depth shows as dots.
std::string indent(int depth) {
  std::string out;
  for (int i = 1; i < depth; ++i) out += "· ";
  return out;
}

std::string cell(const std::string& a, const std::string& b) { return diff_text::arrow(md(a), md(b)); }

void sides(std::ostream& os, const SessionDiff& d) {
  os << "# Kiln diff: " << md(d.a.label) << " → " << md(d.b.label) << "\n\n";
  os << "| | A | B |\n|---|---|---|\n";
  os << "| input | " << md(d.a.label) << " | " << md(d.b.label) << " |\n";
  os << "| origin | " << md(d.a.origin) << " | " << md(d.b.origin) << " |\n";
  os << "| model | " << (d.a.model.empty() ? "-" : code(d.a.model)) << " | " << (d.b.model.empty() ? "-" : code(d.b.model))
     << " |\n";
  os << "| torch | " << md(diff_text::or_dash(d.a.torch_version)) << " | " << md(diff_text::or_dash(d.b.torch_version))
     << " |\n";
  os << "| device | " << md(diff_text::or_dash(d.a.device)) << " | " << md(diff_text::or_dash(d.b.device)) << " |\n\n";
}

void runs(std::ostream& os, const SessionDiff& d) {
  os << "## Runs\n\n";
  if (d.runs.empty()) {
    os << "Neither side has measured runs.\n\n";
    return;
  }
  os << "Paired by mode and backend (then by mode); each cell reads A → B.\n\n"
     << "| run | median ms | B vs A | compile cold / warm ms | kernels/iter | GPU busy | peak memory | max rel error | "
        "status |\n|---|--:|--:|--:|--:|--:|--:|--:|---|\n";
  for (const auto& p : d.runs) {
    auto v = diff_text::run_values(p);
    os << "| " << md(v.label) << " | " << cell(v.median_a, v.median_b) << " | " << v.ratio << " | "
       << cell(v.compile_a, v.compile_b) << " | " << cell(v.kernels_a, v.kernels_b) << " | " << cell(v.busy_a, v.busy_b)
       << " | " << cell(v.peak_a, v.peak_b) << " | " << cell(v.error_a, v.error_b) << " | "
       << cell(diff_text::cut(v.status_a, 80), diff_text::cut(v.status_b, 80)) << " |\n";
  }
  os << "\n";
}

void structure(std::ostream& os, const SessionDiff& d) {
  const auto& s = d.structure;
  os << "## Time by model structure\n\n";
  for (const auto* side : {&s.a, &s.b}) {
    const bool is_a = side == &s.a;
    os << "- **" << (is_a ? "A" : "B") << "** " << md(diff_text::side_summary(*side)) << "\n";
  }
  os << "\n";
  if (!s.a.present && !s.b.present) return;
  os << "### By module (inclusive: a module's own kernels and its submodules')\n\n"
     << "| module | A ms/iter | B ms/iter | B − A ms |\n|---|--:|--:|--:|\n";
  auto shown = diff_text::top_rows(s.modules, kMaxModules, true);
  for (size_t i : shown) {
    const auto& l = s.modules[i];
    std::string name = l.unattributed ? "*" + std::string(kUnattributed) + "*"
                       : l.key.empty() ? "*(model)*"
                                       : indent(l.depth) + code(l.key);
    os << "| " << name << " | " << diff_text::ms_or_dash(l.a_ms) << " | " << diff_text::ms_or_dash(l.b_ms) << " | "
       << diff_text::delta(l.a_ms, l.b_ms) << " |\n";
  }
  if (shown.size() < s.modules.size())
    os << "\n" << s.modules.size() - shown.size() << " smaller modules left out (`--format json` has every one).\n";
  os << "\n### By source line\n\nA kernel fused from several lines is shared among them in equal parts.\n\n"
     << "| line | code | A ms/iter | B ms/iter | B − A ms |\n|---|---|--:|--:|--:|\n";
  shown = diff_text::top_rows(s.lines, kMaxLines, false);
  for (size_t i : shown) {
    const auto& l = s.lines[i];
    os << "| " << (l.unattributed ? "*" + std::string(kUnattributed) + "*" : code(l.key)) << " | "
       << (l.code.empty() ? "" : code(diff_text::cut(l.code, 100))) << " | " << diff_text::ms_or_dash(l.a_ms) << " | "
       << diff_text::ms_or_dash(l.b_ms) << " | " << diff_text::delta(l.a_ms, l.b_ms) << " |\n";
  }
  if (shown.size() < s.lines.size())
    os << "\n" << s.lines.size() - shown.size() << " more lines (`--format json` has every one).\n";
  os << "\n";
}

void breaks(std::ostream& os, const SessionDiff& d) {
  int added = 0, removed = 0, both = 0;
  for (const auto& b : d.breaks) (b.change == Change::Added ? added : b.change == Change::Removed ? removed : both)++;
  os << "## Graph breaks\n\n" << added << " added, " << removed << " removed, " << both << " in both (by line and reason).\n\n";
  if (d.breaks.empty()) return;
  os << "| change | line | reason | module | hits A → B |\n|---|---|---|---|--:|\n";
  size_t n = 0;
  for (const auto& b : d.breaks) {
    if (n++ == kMaxBreaks) {
      os << "\n" << d.breaks.size() - kMaxBreaks << " more (`--format json` has every one).\n";
      break;
    }
    os << "| " << diff_text::change_name(b.change) << " | " << code(b.where) << " | " << md(diff_text::cut(b.reason, 160))
       << " | " << (b.module.empty() ? "-" : code(b.module)) << " | " << b.hits_a << " → " << b.hits_b << " |\n";
  }
  os << "\n";
}

void guard_list(std::ostream& os, const char* what, const std::vector<std::string>& guards) {
  if (guards.empty()) return;
  os << "- guards " << what << ":";
  for (size_t i = 0; i < guards.size() && i < kMaxGuards; ++i) os << " " << code(diff_text::cut(guards[i], 160), false);
  if (guards.size() > kMaxGuards) os << " … " << guards.size() - kMaxGuards << " more";
  os << "\n";
}

void regions(std::ostream& os, const SessionDiff& d) {
  os << "## Compiled regions\n\n" << d.regions.size() << " differ, " << d.regions_same
     << " the same (guards, recompile reason, op counts, input shapes).\n\n";
  size_t n = 0;
  for (const auto& r : d.regions) {
    if (n++ == kMaxRegions) {
      os << d.regions.size() - kMaxRegions << " more (`--format json` has every one).\n\n";
      break;
    }
    os << "### " << md(r.compile_id) << (r.in_a && r.in_b ? "" : r.in_a ? " (only in A)" : " (only in B)") << "\n\n";
    if (!(r.in_a && r.in_b))
      os << "- graph: " << (r.in_a ? r.ops_a : r.ops_b) << " ops ("
         << md(diff_text::or_dash(r.in_a ? r.graph_a : r.graph_b)) << "); guards " << (r.in_a ? r.guards_a : r.guards_b)
         << "\n";
    if (r.in_a && r.in_b)
      os << "- graph: " << r.ops_a << " ops (" << md(diff_text::or_dash(r.graph_a)) << ") → " << r.ops_b << " ops ("
         << md(diff_text::or_dash(r.graph_b)) << "); guards " << r.guards_a << " → " << r.guards_b << "\n";
    if (r.recompile_a != r.recompile_b || (!(r.in_a && r.in_b) && !(r.recompile_a + r.recompile_b).empty()))
      os << "- recompile reason: " << (r.recompile_a.empty() ? "-" : code(diff_text::cut(r.recompile_a, 200), false))
         << " → " << (r.recompile_b.empty() ? "-" : code(diff_text::cut(r.recompile_b, 200), false)) << "\n";
    guard_list(os, "added", r.guards_added);
    guard_list(os, "removed", r.guards_removed);
    if (!r.ops.empty()) {
      os << "- ops:";
      for (const auto& o : r.ops) os << " " << code(o.op, false) << " " << o.a << " → " << o.b << ";";
      os << "\n";
    }
    for (const auto& in : r.inputs)
      os << "- input " << code(in.name, false) << ": " << (in.a.empty() ? "-" : code(in.a, false)) << " → "
         << (in.b.empty() ? "-" : code(in.b, false)) << "\n";
    os << "\n";
  }
}

}  // namespace

std::string render_diff_markdown(const SessionDiff& d) {
  std::ostringstream os;
  sides(os, d);
  runs(os, d);
  structure(os, d);
  breaks(os, d);
  regions(os, d);
  std::string out = os.str();
  while (out.size() >= 2 && out[out.size() - 1] == '\n' && out[out.size() - 2] == '\n') out.pop_back();
  return out;
}

}  // namespace kiln::report
