#include "viewers/comparison/comparison_panel.h"

#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QListWidget>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>

#include "engine/api/report.h"
#include "viewers/comparison/run_table_model.h"
#include "viewers/comparison/speedup_chart.h"

#include "viewers/common/row_table.h"

namespace kiln::viewers {

ComparisonPanel::ComparisonPanel(SelectionContext* ctx, QWidget* parent)
    : QWidget(parent), ctx_(ctx), model_(new RunTableModel(this)) {
  table_ = make_row_table(this, "runTable");
  table_->setModel(model_);

  chart_ = new SpeedupChart(this);
  chart_->setObjectName("speedupChart");
  observations_ = new QListWidget(this);
  observations_->setObjectName("observations");
  observations_->setWordWrap(true);

  auto* obsBox = new QWidget(this);
  auto* ol = new QVBoxLayout(obsBox);
  ol->setContentsMargins(0, 0, 0, 0);
  ol->addWidget(new QLabel("<b>Observations</b>", obsBox));
  ol->addWidget(observations_, 1);
  auto* lower = new QSplitter(Qt::Horizontal, this);
  lower->addWidget(chart_);
  lower->addWidget(obsBox);
  lower->setStretchFactor(0, 2);
  lower->setStretchFactor(1, 3);
  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(table_);
  split->addWidget(lower);
  split->setSizes({200, 420});
  lower->setSizes({620, 620});
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  layout->addWidget(split);

  connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this](const QModelIndex& cur) {
    if (syncing_) return;
    if (const auto* r = model_->run(cur.row())) ctx_->setRun(r->id);
  });
  connect(ctx_, &SelectionContext::selectionChanged, this, &ComparisonPanel::onSelectionChanged);
  onSelectionChanged(ctx_->current(), kSessionPart);
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
