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
    : TablePanel(ctx, parent, "kernelTable"),
      autotuneModel_(new AutotuneTableModel(this)),
      fusionModel_(new FusionTableModel(this)) {
  timesFrom_ = new QLabel(this);
  timesFrom_->setObjectName("kernelTimesFrom");
  auto* tableBox = stacked_box(this, timesFrom_, table_);

  title_ = new QLabel(this);
  title_->setTextFormat(Qt::RichText);
  // A long title (a library kernel's template name) is cut rather than squeezing the side panes.
  title_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  source_ = new CodeView(this);
  source_->setObjectName("kernelSource");
  source_->setPlaceholderText("Select a kernel to see its generated source.");
  auto* sourceBox = stacked_box(this, title_, source_);

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
  auto* nodesBox = stacked_box(this, new QLabel("Graph nodes it came from"), nodes_);

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
  panelLayout()->addWidget(split);

  onRowPicked(table_, [this](int row) {
    if (const auto* k = model_->kernel(row)) {
      ctx_->selectKernel(k->name, k->compile_id);  // names repeat across regions: the one clicked
      // Back from a library kernel's row to the kernel still selected: the selection did not change.
      if (shownRow_ != row) {
        showKernel(k->name, k->compile_id);
        markNode(ctx_->current().node);
      }
    } else if (const auto* d = model_->deviceKernel(row)) {
      showDeviceKernel(*d);
    }
  });
  connect(nodes_, &QListWidget::itemClicked, this, [this](QListWidgetItem* item) {
    const auto* k = shown();
    if (k && item) ctx_->selectNode(k->compile_id, item->text().toStdString());
  });
  connect(source_, &CodeView::lineClicked, this, &KernelsPanel::clickedLine);
  followSelection();
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

// Times come from the selected run. When it ran none of the generated kernels (eager, a peer
// backend: only library kernels) or recorded no kernel time at all, they come from the first run
// that ran them, and the label says which; with no such run, from the selected run as it is.
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
  auto timed = [s](const report::KernelStats& st) {
    return st.records > 0 && (s->kernels.empty() || ran_session_kernels(st, *s));
  };
  // Rows of library kernels come and go with the run: keep the selection signals of their
  // removal from selecting a kernel elsewhere.
  syncing_ = true;
  if (model_->run() != run) model_->setRun(run);
  const int64_t selected_records = model_->stats().records;
  int use = run;
  if (!timed(model_->stats())) {
    for (const auto& r : s->runs)
      if (r.id != run && timed(report::kernel_stats(*s, r.id))) {
        use = r.id;
        break;
      }
    if (use != run) model_->setRun(use);
  }
  syncing_ = false;
  const auto& st = model_->stats();
  const QString what = st.time_source == "host"
                           ? QString("Launches and CPU time per iteration from Kiln's kernel spans and extern calls")
                           : QString("Launches and GPU time per iteration from device records");
  const QString iters = QString(" (%1 traced iteration%2)").arg(st.iterations).arg(st.iterations == 1 ? "" : "s");
  if (st.records == 0)
    timesFrom_->setText(s->runs.empty() ? "No measured runs in this session: launches and times are unknown."
                                        : "No run of this session recorded kernel time.");
  else if (use < 0)
    timesFrom_->setText(what + " of the whole imported trace" + iters + "; share of its kernel time.");
  else if (use == run)
    timesFrom_->setText(what + " of the selected run, " + run_name(use) + iters + "; share of its kernel time.");
  else
    timesFrom_->setText("The selected run, " + run_name(run) +
                        (selected_records > 0 ? ", ran none of the generated kernels. "
                                              : ", recorded no kernel time. ") +
                        what + " of " + run_name(use) + iters + "; share of its kernel time.");
  // A library kernel's row goes with its run: show the selected kernel again.
  if (deviceShown_) {
    showKernel(ctx_->current().kernel, ctx_->current().compile_id);
    markNode(ctx_->current().node);
  }
}

const session::Kernel* KernelsPanel::shown() const { return model_->kernel(shownRow_); }
std::string KernelsPanel::shownKernel() const { return shown() ? shown()->name : ""; }
std::string KernelsPanel::shownRegion() const { return shown() ? shown()->compile_id : ""; }

void KernelsPanel::showKernel(const std::string& name, const std::string& compile_id) {
  const auto* s = ctx_->session();
  int row = model_->rowOf(name, compile_id);
  if (row < 0) row = model_->rowOf(name, "");
  shownRow_ = row;
  deviceShown_ = false;
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

void KernelsPanel::showDeviceKernel(const report::KernelStat& d) {
  shownRow_ = -1;
  deviceShown_ = true;
  nodes_->clear();
  const bool host = model_->stats().time_source == "host";
  const std::string by = launched_by_text(d);
  title_->setText(QString("<b>%1</b> &nbsp; %2 &nbsp; %3")
                      .arg(short_kernel_name(d.name).toHtmlEscaped(), host ? "host" : "device",
                           QString::fromStdString(by).toHtmlEscaped()));
  QString note;
  if (host)
    note = QString::fromStdString(d.name) + ": a LibTorch call Kiln's code makes on the CPU; no source.";
  else if (d.launcher == "CUDA graph replay")
    note = "A library kernel (cuBLAS, cuDNN or ATen) replayed from a CUDA graph: no source.";
  else
    note = "A library kernel (cuBLAS, cuDNN or ATen) " + QString::fromStdString(by) +
           (d.launcher.empty() ? QString() : " (" + QString::fromStdString(d.launcher) + ")") + ": no source.";
  source_->setCode(QString::fromStdString(d.name) + "\n\n" + note, CodeLanguage::Plain);
  source_->markLines({});
  const std::string launcher = d.launched_by.empty() || d.launched_by == d.name
                                   ? by
                                   : d.launched_by + (d.launcher.empty() ? "" : " (" + d.launcher + ")");
  launch_->setText(QString("<b>Launched by</b><br>%1<br><br><b>Mean</b> %2 µs &nbsp; <b>min</b> %3 µs &nbsp; "
                           "<b>max</b> %4 µs")
                       .arg(QString::fromStdString(launcher).toHtmlEscaped(), QString::number(d.mean_ns / 1e3, 'f', 2),
                            QString::number(double(d.min_ns) / 1e3, 'f', 2),
                            QString::number(double(d.max_ns) / 1e3, 'f', 2)));
  autotuneModel_->setCandidates({});
  tabs_->setTabText(1, "Autotune (0)");
  fusionModel_->setDecisions({}, "");
  tabs_->setTabText(2, "Fusion decisions (0)");
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
