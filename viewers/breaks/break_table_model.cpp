#include "viewers/breaks/break_table_model.h"

#include <QFont>
#include <QStringList>
#include <filesystem>
#include <utility>

namespace kiln::viewers {

std::string break_compile_id(const session::Session& s, const session::GraphBreakRecord& b) {
  if (!b.compile_id.empty()) return b.compile_id;
  for (int region : {b.info.ends_region, b.info.resumes_region}) {
    if (region < 0) continue;
    for (const auto& r : s.regions)
      if (r.region == region) return r.compile_id;
  }
  return "";
}

namespace {
QString first_line(const std::string& s) {
  return QString::fromStdString(s.substr(0, s.find('\n')));
}
QString location(const session::GraphBreakRecord& b) {
  const auto& loc = b.info.loc;
  if (!loc.known()) return "(no line)";
  return QString::fromStdString(std::filesystem::path(loc.file).filename().string()) + ":" +
         QString::number(loc.line);
}
}  // namespace

BreakTableModel::BreakTableModel(QObject* parent)
    : RowTableModel({"Id", "Line", "Cost / iter", "Lost fusion", "Share", "Reason", "Hint", "Hits", "Sites", "Category", "Module",
                     "Compile ids"},
                    parent) {}

void BreakTableModel::setSession(std::shared_ptr<const session::Session> s) {
  // The groups shown until now point into the session they came from: it stays until they are gone.
  const auto shown = std::exchange(session_, std::move(s));
  costs_ = session_ ? report::break_costs_of(*session_, report::shown_break_cost_run(*session_))
                    : std::vector<session::BreakCost>{};
  setRows(session_ ? report::ranked_break_groups(*session_) : std::vector<report::BreakGroup>{});
}

const session::BreakCost* BreakTableModel::cost(int row) const {
  const auto* g = group(row);
  return g && g->first ? report::cost_of(costs_, *g->first) : nullptr;
}

const session::GraphBreakRecord* BreakTableModel::record(int row) const {
  const auto* g = group(row);
  return g ? g->first : nullptr;
}

QVariant BreakTableModel::cell(const report::BreakGroup& g, int column, int role) const {
  if (!g.first) return {};
  const auto& b = *g.first;
  const session::BreakCost* c = report::cost_of(costs_, b);
  if (role == Qt::DisplayRole) {
    switch (column) {
      case Cost: return c ? QString::fromStdString(report::fixed(c->total_ms, 3) + " ms") : QString("-");
      case LostFusion:
        if (!c || !c->lost_fusion_checked) return QString("-");
        if (!c->lost_fusion_unmeasured.empty()) return QString("not measured");
        if (c->lost_fusion.empty()) return QString("none");
        return QString::fromStdString(report::fixed(c->lost_fusion_ms, 3) + " ms");
      case Share: return c ? QString::fromStdString(report::percent(c->share)) : QString("-");
      case Id: return QString::fromStdString(b.info.id);
      case Category: return QString::fromUtf8(capture::break_category_info(b.info.category).name);
      case Reason: return first_line(b.info.reason);
      case Hint: return first_line(b.info.hint);
      case Hits: return g.hits;
      case Sites: return g.sites;
      case Module: return QString::fromStdString(b.info.module_path);
      case Location: return location(b);
      case CompileIds: {
        QStringList ids;
        for (const auto& id : g.compile_ids) ids << QString::fromStdString(id);
        if (ids.isEmpty() && session_) ids << QString::fromStdString(break_compile_id(*session_, b));
        return ids.join(' ');
      }
    }
  } else if (role == Qt::ToolTipRole) {
    switch (column) {
      case Reason: return QString::fromStdString(b.info.reason);
      case Hint: return QString::fromStdString(b.info.hint);
      case Location: return QString::fromStdString(b.info.loc.file + ":" + std::to_string(b.info.loc.line) +
                                                   (b.info.loc.text.empty() ? "" : "\n" + b.info.loc.text));
      case Id: return QString::fromStdString(b.info.op);
      case Cost:
        if (!c) return QString("Not measured: no traced run of a compiled mode in this session.");
        return QString::fromStdString("gap between the regions " + report::fixed(c->gap_ms, 3) + " ms (interpreter " +
                                      report::fixed(c->interpreter_ms, 3) + " ms), guards of the next region " +
                                      report::fixed(c->guard_ms, 3) + " ms, per iteration over " +
                                      std::to_string(c->iterations) + " traced iterations\nlost fusion: " +
                                      report::lost_fusion_text(*c));
      case LostFusion:
        if (!c) return {};
        return QString::fromStdString(
            "Lost fusion: " + report::lost_fusion_text(*c) +
            "\nThe kernels Kiln's scheduler fuses across the break when its two regions are joined; the separate "
            "kernels' time minus the fused ones', measured in the same process on the same inputs.");
      default: return {};
    }
  } else if (role == Qt::TextAlignmentRole) {
    if (column == Hits || column == Sites || column == Cost || column == LostFusion || column == Share)
      return int(Qt::AlignRight | Qt::AlignVCenter);
  }
  return {};
}

}  // namespace kiln::viewers
