#include "viewers/comparison/comparison_panel.h"

#include <QListWidget>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>

#include "engine/api/report.h"
#include "viewers/comparison/run_table_model.h"
#include "viewers/comparison/speedup_chart.h"

namespace kiln::viewers {

ComparisonPanel::ComparisonPanel(SelectionContext* ctx, QWidget* parent)
    : TablePanel(ctx, parent, "runTable") {
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
  panelLayout()->addWidget(split);

  onRowPicked(table_, [this](int row) {
    if (const auto* r = model_->run(row)) ctx_->setRun(r->id);
  });
  followSelection();
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
