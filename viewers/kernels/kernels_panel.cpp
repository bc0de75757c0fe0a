#include "viewers/kernels/kernels_panel.h"

#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QListWidget>
#include <QSplitter>
#include <QTabWidget>
#include <QTableView>
#include <QVBoxLayout>
#include <algorithm>

#include "viewers/common/code_view.h"
#include "viewers/kernels/kernel_detail_models.h"
#include "viewers/kernels/kernel_source_lines.h"
#include "viewers/kernels/kernel_table_model.h"

#include "viewers/common/row_table.h"

namespace kiln::viewers {

KernelsPanel::KernelsPanel(SelectionContext* ctx, QWidget* parent)
    : QWidget(parent),
      ctx_(ctx),
      model_(new KernelTableModel(this)),
      autotuneModel_(new AutotuneTableModel(this)),
      fusionModel_(new FusionTableModel(this)) {
  table_ = make_row_table(this, "kernelTable");
  table_->setModel(model_);
  timesFrom_ = new QLabel(this);
  auto* tableBox = new QWidget(this);
  auto* tl = new QVBoxLayout(tableBox);
  tl->setContentsMargins(0, 0, 0, 0);
  tl->addWidget(timesFrom_);
  tl->addWidget(table_, 1);

  auto* sourceBox = new QWidget(this);
  title_ = new QLabel(sourceBox);
  title_->setTextFormat(Qt::RichText);
  source_ = new CodeView(sourceBox);
  source_->setObjectName("kernelSource");
  source_->setPlaceholderText("Select a kernel to see its generated source.");
  auto* sl = new QVBoxLayout(sourceBox);
  sl->setContentsMargins(0, 0, 0, 0);
  sl->addWidget(title_);
  sl->addWidget(source_, 1);

  nodes_ = new QListWidget(this);
  nodes_->setObjectName("kernelNodes");
  launch_ = new QLabel(this);
  launch_->setObjectName("kernelLaunch");
  launch_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
  launch_->setWordWrap(true);
  launch_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  launch_->setMargin(6);
  autotune_ = make_row_table(this, "autotuneTable");
  autotune_->setModel(autotuneModel_);
  fusion_ = make_row_table(this, "fusionTable");
  fusion_->setModel(fusionModel_);

  auto* nodesBox = new QWidget(this);
  auto* nl = new QVBoxLayout(nodesBox);
  nl->setContentsMargins(0, 0, 0, 0);
  nl->addWidget(new QLabel("Graph nodes it came from", nodesBox));
  nl->addWidget(nodes_, 1);

  tabs_ = new QTabWidget(this);
  tabs_->addTab(launch_, "Launch");
  tabs_->addTab(autotune_, "Autotune");
  tabs_->addTab(fusion_, "Fusion decisions");

  auto* side = new QSplitter(Qt::Vertical, this);
  side->addWidget(nodesBox);
  side->addWidget(tabs_);
  auto* lower = new QSplitter(Qt::Horizontal, this);
  lower->addWidget(sourceBox);
  lower->addWidget(side);
  lower->setStretchFactor(0, 3);
  lower->setStretchFactor(1, 2);
  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(tableBox);
  split->addWidget(lower);
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 2);
  split->setSizes({260, 520});
  lower->setSizes({800, 500});
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  layout->addWidget(split);

  connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this](const QModelIndex& cur) {
    if (syncing_) return;
    if (const auto* k = model_->kernel(cur.row())) {
      ctx_->selectKernel(k->name, k->compile_id);  // names repeat across regions: the one clicked
    }
  });
  connect(nodes_, &QListWidget::itemClicked, this, [this](QListWidgetItem* item) {
    const auto* k = shown();
    if (k && item) ctx_->selectNode(k->compile_id, item->text().toStdString());
  });
  connect(source_, &CodeView::lineClicked, this, &KernelsPanel::clickedLine);
  connect(ctx_, &SelectionContext::selectionChanged, this, &KernelsPanel::onSelectionChanged);
  onSelectionChanged(ctx_->current(), kSessionPart);
}

void KernelsPanel::onSelectionChanged(const Selection& sel, unsigned parts) {
  if (parts & kSessionPart) {
    model_->setSession(sel.session, sel.run);
    updateTimes(sel.run);
    table_->resizeColumnsToContents();
    table_->setColumnWidth(KernelTableModel::Name, std::min(table_->columnWidth(KernelTableModel::Name), 340));
    shownRow_ = -1;
    std::string first = sel.kernel;
    if (first.empty() && sel.session && !sel.session->kernels.empty()) {
      // Show the first kernel of the selected region without changing the selection.
      for (const auto& k : sel.session->kernels)
        if (k.compile_id == sel.compile_id && (k.language == "cpp" || k.language == "cuda" || k.language == "triton")) {
          first = k.name;
          break;
        }
      if (first.empty()) first = sel.session->kernels.front().name;
    }
    showKernel(first, sel.compile_id);
  } else if (parts & kRunPart) {
    updateTimes(sel.run);
  }
  if ((parts & kKernelPart) && !sel.kernel.empty()) showKernel(sel.kernel, sel.compile_id);
  else if ((parts & kRegionPart) && !(parts & kSessionPart) && !sel.kernel.empty())
    if (const auto* k = shown(); k && k->name == sel.kernel && k->compile_id != sel.compile_id)
      showKernel(sel.kernel, sel.compile_id);
  if (parts & (kNodePart | kKernelPart | kSessionPart)) markNode(sel.node);
}

// Times come from the selected run; when it ran no generated kernel (eager), from the first run
// that did, and the label says which.
void KernelsPanel::updateTimes(int run) {
  const auto* s = ctx_->session();
  if (!s) {
    timesFrom_->clear();
    return;
  }
  auto run_name = [s](int id) {
    for (const auto& r : s->runs)
      if (r.id == id) return QString::fromStdString(r.mode + " (" + r.backend + ")");
    return QString("run %1").arg(id);
  };
  int use = run;
  if (report::kernel_times(*s, run).empty()) {
    use = -1;
    for (const auto& r : s->runs)
      if (!report::kernel_times(*s, r.id).empty()) {
        use = r.id;
        break;
      }
  }
  model_->setRun(use);
  if (use < 0 && !report::kernel_times(*s, -1).empty())
    timesFrom_->setText("Launches, time and share of kernel time over the whole timeline.");
  else if (use < 0)
    timesFrom_->setText(s->runs.empty() ? "No measured runs in this session: launches and times are unknown."
                                        : "No run of this session timed its kernels.");
  else if (use == run)
    timesFrom_->setText("Launches, time and share of kernel time in the selected run, " + run_name(use) + ".");
  else
    timesFrom_->setText("The selected run, " + run_name(run) + ", ran no generated kernel; times are from " +
                        run_name(use) + ".");
}

const session::Kernel* KernelsPanel::shown() const { return model_->kernel(shownRow_); }
std::string KernelsPanel::shownKernel() const { return shown() ? shown()->name : ""; }
std::string KernelsPanel::shownRegion() const { return shown() ? shown()->compile_id : ""; }

void KernelsPanel::showKernel(const std::string& name, const std::string& compile_id) {
  const auto* s = ctx_->session();
  int row = model_->rowOf(name, compile_id);
  if (row < 0) row = model_->rowOf(name, "");
  shownRow_ = row;
  const auto* k = shown();
  syncing_ = true;
  if (row >= 0) {
    table_->selectRow(row);
    table_->scrollTo(model_->index(row, 0));
  } else {
    table_->clearSelection();
  }
  syncing_ = false;
  nodes_->clear();
  if (!k) {
    title_->setText(s && !s->kernels.empty() ? "Select a kernel." : (s ? "This session has no generated kernels." : ""));
    source_->setCode("", CodeLanguage::Plain);
    launch_->clear();
    autotuneModel_->setCandidates({});
    fusionModel_->setDecisions(s ? s->fusion : std::vector<session::FusionDecision>{}, ctx_->current().compile_id);
    return;
  }
  title_->setText(QString("<b>%1</b> &nbsp; %2 &nbsp; %3")
                      .arg(QString::fromStdString(k->name).toHtmlEscaped(),
                           QString::fromStdString(k->language).toHtmlEscaped(),
                           QString::fromStdString(k->compile_id).toHtmlEscaped()));
  source_->setCode(QString::fromStdString(k->source), code_language(k->language));
  for (const auto& n : k->nodes) nodes_->addItem(QString::fromStdString(n));
  QString launch = QString("<b>Launch config</b><br>%1<br><br><b>Registers per thread</b> %2<br><b>Shared memory</b> %3")
                       .arg(k->launch_config.empty() ? QString("(not recorded)")
                                                     : QString::fromStdString(k->launch_config).toHtmlEscaped(),
                            k->registers > 0 ? QString::number(k->registers) : QString("(not recorded)"),
                            k->shared_bytes > 0 ? QString("%1 bytes").arg(k->shared_bytes) : QString("none"));
  launch_->setText(launch);
  autotuneModel_->setCandidates(k->autotune);
  autotune_->resizeColumnsToContents();
  tabs_->setTabText(1, QString("Autotune (%1)").arg(k->autotune.size()));
  fusionModel_->setDecisions(s->fusion, k->compile_id);
  fusion_->resizeColumnsToContents();
  tabs_->setTabText(2, QString("Fusion decisions (%1)").arg(fusionModel_->rowCount()));
}

void KernelsPanel::markNode(const std::string& node) {
  const auto* k = shown();
  std::set<int> lines;
  const QSignalBlocker block(nodes_);
  nodes_->clearSelection();
  if (k && !node.empty()) {
    for (int l : lines_naming_node(k->source, node)) lines.insert(l);
    auto it = std::find(k->nodes.begin(), k->nodes.end(), node);
    if (it != k->nodes.end()) nodes_->setCurrentRow(int(it - k->nodes.begin()));
  }
  source_->markLines(lines);
}

void KernelsPanel::clickedLine(int line) {
  const auto* k = shown();
  if (!k) return;
  for (const auto& name : nodes_named_on_line(source_->lineText(line).toStdString()))
    if (std::find(k->nodes.begin(), k->nodes.end(), name) != k->nodes.end()) {
      ctx_->selectNode(k->compile_id, name);
      return;
    }
}

}  // namespace kiln::viewers
