#include "viewers/breaks/breaks_panel.h"

#include <QFileInfo>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>

#include "viewers/breaks/break_changes.h"
#include "viewers/breaks/break_source.h"
#include "viewers/breaks/break_table_model.h"
#include "viewers/breaks/what_if_box.h"
#include "viewers/common/code_view.h"

namespace kiln::viewers {

BreaksPanel::BreaksPanel(SelectionContext* ctx, QWidget* parent)
    : TablePanel(ctx, parent, "breaksTable") {
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);

  detail_ = new QLabel(this);
  detail_->setWordWrap(true);
  detail_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  detail_->setTextFormat(Qt::RichText);
  source_ = new CodeView(this);
  source_->setObjectName("breakSource");
  source_->setPlaceholderText("Select a graph break to see the source around its line.");

  changeModel_ = new BreakChangeModel(this);
  changes_ = make_row_table(this, "breakChanges");
  changes_->setModel(changeModel_);
  changesTitle_ = new QLabel(this);
  changesBox_ = stacked_box(this, changesTitle_, changes_);
  changesBox_->hide();

  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(table_);
  split->addWidget(changesBox_);
  whatIf_ = new WhatIfBox(this);
  auto* about = new QWidget(this);
  auto* aboutLayout = new QVBoxLayout(about);
  aboutLayout->setContentsMargins(0, 0, 0, 0);
  aboutLayout->addWidget(detail_);
  aboutLayout->addWidget(whatIf_);
  split->addWidget(stacked_box(this, about, source_));
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 1);
  split->setStretchFactor(2, 3);
  split->setSizes({180, 140, 520});
  panelLayout()->addWidget(split);

  connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          [this](const QModelIndex& cur) {
            if (!cur.isValid()) return;
            showBreak(cur.row());
            if (syncing_) return;
            if (const auto* b = model_->record(cur.row()); b && ctx_->session()) {
              std::string id = break_compile_id(*ctx_->session(), *b);
              if (!id.empty()) ctx_->setRegion(id);
            }
          });
  followSelection();
}

void BreaksPanel::setSourceDirs(const std::vector<std::string>& dirs) {
  sourceDirs_ = dirs;
  auto cur = table_->currentIndex();
  if (cur.isValid()) showBreak(cur.row());
}

int BreaksPanel::rowOfRegion(const std::string& compile_id) const {
  const auto* s = ctx_->session();
  if (!s || compile_id.empty()) return -1;
  for (int r = 0; r < model_->rowCount(); ++r) {
    const auto* g = model_->group(r);
    if (break_compile_id(*s, *g->first) == compile_id) return r;
    for (const auto& id : g->compile_ids)
      if (id == compile_id) return r;
  }
  return -1;
}

void BreaksPanel::followRow(int row) {
  if (row < 0 || row >= model_->rowCount() || row == table_->currentIndex().row()) return;
  syncing_ = true;
  table_->selectRow(row);
  syncing_ = false;
}

void BreaksPanel::onSelectionChanged(const Selection& sel, unsigned parts) {
  if (parts & (kSessionPart | kComparePart)) {
    const auto* d = sel.compare ? sel.compare->diff.get() : nullptr;
    changeModel_->setDiff(d ? sel.compare->diff : nullptr);
    changesBox_->setVisible(d != nullptr);
    if (d)
      changesTitle_->setText(QString("<b>Compared with %1</b>: %2 added in B, %3 removed in B, %4 in both")
                                 .arg(QFileInfo(QString::fromStdString(sel.compare->path)).fileName().toHtmlEscaped())
                                 .arg(changeModel_->count(report::Change::Added))
                                 .arg(changeModel_->count(report::Change::Removed))
                                 .arg(changeModel_->count(report::Change::Both)));
    changes_->resizeColumnsToContents();
  }
  if (!(parts & kSessionPart)) {
    if (parts & kRegionPart) followRow(rowOfRegion(sel.compile_id));
    return;
  }
  model_->setSession(sel.session);
  whatIf_->setBreak(nullptr, nullptr);
  source_->setCode("", CodeLanguage::Python);
  detail_->setText(model_->rowCount() ? QString("%1 distinct graph break(s), most costly first; select one to see its source.")
                                            .arg(model_->rowCount())
                                      : QString(sel.session ? "No graph breaks: the model is captured whole." : ""));
  table_->resizeColumnsToContents();
  for (int c : {BreakTableModel::Reason, BreakTableModel::Hint})
    table_->setColumnWidth(c, std::min(table_->columnWidth(c), 420));
  // Show the source of the selected region's break (or the first) right away.
  int row = rowOfRegion(sel.compile_id);
  followRow(row >= 0 ? row : 0);
}

void BreaksPanel::showBreak(int row) {
  const auto* b = model_->record(row);
  const auto* s = ctx_->session();
  if (!b || !s) return;
  whatIf_->setBreak(s, b);
  BreakSource src = locate_break_source(*s, *b, ctx_->current().session_path, sourceDirs_);
  QString where = QString::fromStdString(src.found_file.empty() ? src.recorded_file : src.found_file);
  QString html = QString("<b>%1</b> %2<br>%3<br><i>Hint:</i> %4")
                     .arg(QString::fromStdString(b->info.id).toHtmlEscaped(),
                          QString::fromStdString(b->info.reason).toHtmlEscaped(),
                          (where.isEmpty() ? QString("(no file)") : where.toHtmlEscaped()) +
                              (src.line > 0 ? ":" + QString::number(src.line) : QString()) +
                              (b->info.module_path.empty()
                                   ? QString()
                                   : "  in " + QString::fromStdString(b->info.module_path).toHtmlEscaped()),
                          QString::fromStdString(b->info.hint).toHtmlEscaped().replace("\n", "<br>"));
  if (const auto* c = model_->cost(row))
    html += "<br><b>Costs " + QString::fromStdString(report::break_cost_text(*c)).toHtmlEscaped() +
            "</b> per iteration: gap " + QString::fromStdString(report::fixed(c->gap_ms, 3)) + " ms (interpreter " +
            QString::fromStdString(report::fixed(c->interpreter_ms, 3)) + " ms), guards of the next region " +
            QString::fromStdString(report::fixed(c->guard_ms, 3)) + " ms, lost fusion " +
            QString::fromStdString(report::lost_fusion_text(*c)).toHtmlEscaped();
  if (!src.note.empty()) html += "<br><span style='color:#8a5a00'>" + QString::fromStdString(src.note).toHtmlEscaped() + "</span>";
  detail_->setText(html);
  source_->setCode(QString::fromStdString(src.excerpt.text), CodeLanguage::Python, src.excerpt.first_line);
  if (src.line > 0) source_->markLines({src.line});
}

}  // namespace kiln::viewers
