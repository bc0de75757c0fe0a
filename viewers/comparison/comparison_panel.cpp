#include "viewers/comparison/comparison_panel.h"

#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QSplitter>
#include <QStackedWidget>
#include <QTabWidget>
#include <QTableView>
#include <QTextDocumentFragment>
#include <QVBoxLayout>

#include "engine/api/report.h"
#include "viewers/comparison/diff_models.h"
#include "viewers/comparison/run_table_model.h"
#include "viewers/comparison/speedup_chart.h"

namespace kiln::viewers {

namespace {

QString esc(const std::string& s) { return QString::fromStdString(s).toHtmlEscaped(); }

QString side_line(const char* letter, const report::DiffSide& s) {
  QStringList parts;
  for (const auto* v : {&s.origin, &s.model, &s.device}) if (!v->empty()) parts << esc(*v);
  if (!s.torch_version.empty()) parts << "torch " + esc(s.torch_version);
  return QString("<b>%1</b>&nbsp; %2 &nbsp;<span style='color:#555'>%3</span>")
      .arg(letter, esc(QFileInfo(QString::fromStdString(s.label)).fileName().toStdString()), parts.join(" · "));
}

QString changes_html(const report::SessionDiff& d) {
  int added = 0, removed = 0, both = 0;
  for (const auto& b : d.breaks)
    (b.change == report::Change::Added ? added : b.change == report::Change::Removed ? removed : both)++;
  int guards_added = 0, guards_removed = 0, only_a = 0, only_b = 0;
  for (const auto& r : d.regions) {
    guards_added += int(r.guards_added.size());
    guards_removed += int(r.guards_removed.size());
    only_a += r.in_a && !r.in_b;
    only_b += r.in_b && !r.in_a;
  }
  QString html = QString("<b>Graph breaks</b> (by line and reason): %1 added in B, %2 removed, %3 in both. ")
                     .arg(added)
                     .arg(removed)
                     .arg(both);
  html += QString("<b>Compiled regions</b>: %1 differ, %2 the same").arg(d.regions.size()).arg(d.regions_same);
  if (only_a || only_b) html += QString(" (%1 only in A, %2 only in B)").arg(only_a).arg(only_b);
  html += QString("; guards %1 added, %2 removed. The breaks and guards panels mark them.")
              .arg(guards_added)
              .arg(guards_removed);
  return html;
}

QTableView* structure_table(QWidget* parent, const char* name, StructureModel* model) {
  auto* t = make_row_table(parent, name);
  t->setModel(model);
  t->setSelectionMode(QAbstractItemView::NoSelection);
  if (model->kind() == StructureModel::Kind::Modules) t->hideColumn(StructureModel::Code);
  t->horizontalHeader()->setStretchLastSection(false);  // the numbers stay next to their names
  return t;
}

}  // namespace

ComparisonPanel::ComparisonPanel(SelectionContext* ctx, QWidget* parent)
    : TablePanel(ctx, parent, "runTable"),
      pairModel_(new RunPairModel(this)),
      moduleModel_(new StructureModel(StructureModel::Kind::Modules, this)),
      lineModel_(new StructureModel(StructureModel::Kind::Lines, this)) {
  chart_ = new SpeedupChart(this);
  chart_->setObjectName("speedupChart");
  observations_ = new QListWidget(this);
  observations_->setObjectName("observations");
  observations_->setWordWrap(true);

  auto* lower = new QSplitter(Qt::Horizontal, this);
  lower->addWidget(chart_);
  lower->addWidget(titled_box(this, "Observations", observations_));
  lower->setStretchFactor(0, 2);
  lower->setStretchFactor(1, 3);
  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(table_);
  split->addWidget(lower);
  split->setSizes({200, 420});
  lower->setSizes({620, 620});

  // The comparison page.
  auto* page = new QWidget(this);
  sides_ = new QLabel(page);
  sides_->setObjectName("comparisonSides");
  sides_->setTextFormat(Qt::RichText);
  sides_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* end = new QPushButton("End comparison", page);
  end->setToolTip("Show the first session alone again");
  auto* head = new QHBoxLayout;
  head->addWidget(sides_, 1);
  head->addWidget(end, 0, Qt::AlignTop);
  pairs_ = make_row_table(page, "runPairTable");
  pairs_->setModel(pairModel_);
  structure_ = new QLabel(page);
  structure_->setObjectName("comparisonStructure");
  structure_->setTextFormat(Qt::RichText);
  structure_->setWordWrap(true);
  modules_ = structure_table(page, "moduleTimeTable", moduleModel_);
  lines_ = structure_table(page, "lineTimeTable", lineModel_);
  tabs_ = new QTabWidget(page);
  tabs_->addTab(modules_, "Time by module");
  tabs_->addTab(lines_, "Time by source line");
  changes_ = new QLabel(page);
  changes_->setObjectName("comparisonChanges");
  changes_->setTextFormat(Qt::RichText);
  changes_->setWordWrap(true);
  auto* timeBox = new QWidget(page);
  auto* tl = new QVBoxLayout(timeBox);
  tl->setContentsMargins(0, 0, 0, 0);
  tl->addWidget(structure_);
  tl->addWidget(tabs_, 1);
  auto* csplit = new QSplitter(Qt::Vertical, page);
  csplit->addWidget(titled_box(page, "Runs side by side (A → B)", pairs_));
  csplit->addWidget(titled_box(page, "Kernel time by model structure, per iteration", timeBox));
  csplit->setSizes({130, 520});
  auto* pl = new QVBoxLayout(page);
  pl->setContentsMargins(0, 0, 0, 0);
  pl->addLayout(head);
  pl->addWidget(csplit, 1);
  pl->addWidget(changes_);

  pages_ = new QStackedWidget(this);
  pages_->addWidget(split);
  pages_->addWidget(page);
  panelLayout()->addWidget(pages_);

  onRowPicked(table_, [this](int row) {
    if (const auto* r = model_->run(row)) ctx_->setRun(r->id);
  });
  onRowPicked(pairs_, [this](int row) {
    if (const auto* p = pairModel_->at(row); p && p->a) ctx_->setRun(p->a->id);
  });
  connect(end, &QPushButton::clicked, this, [this] { ctx_->setComparison(nullptr); });
  followSelection(kSessionPart | kComparePart);
}

bool ComparisonPanel::comparing() const { return pages_->currentIndex() == 1; }

QString ComparisonPanel::sidesText() const { return QTextDocumentFragment::fromHtml(sides_->text()).toPlainText(); }

QString ComparisonPanel::changesText() const {
  return QTextDocumentFragment::fromHtml(changes_->text()).toPlainText();
}

void ComparisonPanel::showComparison(const Selection& sel) {
  const auto* d = sel.compare ? sel.compare->diff.get() : nullptr;
  pages_->setCurrentIndex(d ? 1 : 0);
  pairModel_->setDiff(d ? sel.compare->diff : nullptr);
  moduleModel_->setDiff(d ? sel.compare->diff : nullptr);
  lineModel_->setDiff(d ? sel.compare->diff : nullptr);
  if (!d) return;
  sides_->setText(side_line("A", d->a) + "<br>" + side_line("B", d->b));
  const auto& st = d->structure;
  structure_->setText(QString("<b>A</b> %1<br><b>B</b> %2")
                          .arg(esc(report::diff_text::side_summary(st.a)), esc(report::diff_text::side_summary(st.b))));
  changes_->setText(changes_html(*d));
  pairs_->resizeColumnsToContents();
  for (auto* t : {modules_, lines_}) {
    t->resizeColumnsToContents();
    t->setColumnWidth(StructureModel::Key, std::min(std::max(t->columnWidth(StructureModel::Key), 160), 320));
    t->setColumnWidth(StructureModel::Code, std::min(t->columnWidth(StructureModel::Code), 460));
  }
}

void ComparisonPanel::onSelectionChanged(const Selection& sel, unsigned parts) {
  if (parts & kSessionPart) {
    model_->setSession(sel.session);
    chart_->setSession(sel.session.get());
    observations_->clear();
    if (sel.session) {
      for (const auto& o : report::observations(*sel.session)) observations_->addItem(QString::fromStdString(o));
      if (sel.session->runs.empty())
        observations_->addItem("This session has no measured runs (an import of a compile log); open the model's .pt "
                               "to profile and compare its modes.");
    }
    table_->resizeColumnsToContents();
    table_->setColumnWidth(RunTableModel::Status, std::min(table_->columnWidth(RunTableModel::Status), 260));
  }
  if (parts & (kSessionPart | kComparePart)) showComparison(sel);
  if (parts & (kRunPart | kSessionPart)) {
    syncing_ = true;
    int row = model_->rowOfRun(sel.run);
    if (row >= 0)
      table_->selectRow(row);
    else
      table_->clearSelection();
    syncing_ = false;
  }
}

}  // namespace kiln::viewers
