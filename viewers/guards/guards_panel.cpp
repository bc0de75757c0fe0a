#include "viewers/guards/guards_panel.h"

#include <QComboBox>
#include <QFileInfo>
#include <QTextDocumentFragment>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QListWidget>
#include <QScrollArea>
#include <QSplitter>
#include <QTableView>
#include <QTreeView>
#include <QVBoxLayout>

#include "viewers/guards/guard_diff.h"
#include "viewers/guards/guard_diff_model.h"
#include "viewers/guards/guard_tree_model.h"
#include "viewers/guards/recompile_table_model.h"

#include "viewers/common/row_table.h"

namespace kiln::viewers {

namespace {
// The entry before `compile_id` in the same region ("[2/1]" → "[2/0]"), "" when none.
std::string previous_entry(const session::Session& s, const std::string& compile_id) {
  const auto* r = find_region(s, compile_id);
  if (!r) return "";
  int region = r->region >= 0 ? r->region : region_of_compile_id(compile_id);
  std::string prev;
  for (const auto& o : s.regions) {
    if (o.compile_id == compile_id) return prev;
    if ((o.region >= 0 ? o.region : region_of_compile_id(o.compile_id)) == region) prev = o.compile_id;
  }
  return "";
}
// The entry after `compile_id` in the same region ("[2/0]" → "[2/1]"), "" when none.
std::string next_entry(const session::Session& s, const std::string& compile_id) {
  const auto* r = find_region(s, compile_id);
  if (!r) return "";
  int region = r->region >= 0 ? r->region : region_of_compile_id(compile_id);
  bool seen = false;
  for (const auto& o : s.regions) {
    if (o.compile_id == compile_id) {
      seen = true;
      continue;
    }
    if (seen && (o.region >= 0 ? o.region : region_of_compile_id(o.compile_id)) == region) return o.compile_id;
  }
  return "";
}
// Picker entries of the compared session (B) carry this prefix.
const QString kOtherPrefix = "B ";

// The region a picker's text names: the shown session's, or with the prefix the compared one's.
const session::CompiledRegion* picked_region(const Selection& sel, const QString& text) {
  if (text.startsWith(kOtherPrefix))
    return sel.compare && sel.compare->session
               ? find_region(*sel.compare->session, text.mid(kOtherPrefix.size()).toStdString())
               : nullptr;
  return sel.session ? find_region(*sel.session, text.toStdString()) : nullptr;
}

// What recompiles cost in the session, as rich text (escaped).
QString recompile_costs_html(const session::Session* s) {
  auto esc = [](const std::string& t) { return QString::fromStdString(t).toHtmlEscaped(); };
  if (!s) return "";
  const auto& c = s->recompile_costs;
  if (!c.measured())
    return "<i>Not measured in this session: <code>kiln explain MODEL --input ... --cost -o FILE</code> measures "
           "what each recompile costs and the effect of following the advice.</i>";
  QString html = QString("Measured on the first pass through %1 call(s):<br>").arg(c.calls);
  for (const auto& r : c.regions) {
    html += QString("<b>region %1</b>: ").arg(r.region) + esc(report::region_recompile_text(r)) + "<br>";
    for (const auto& e : r.entries)
      html += "&nbsp;&nbsp;<code>" + esc(e.compile_id) + "</code> " + esc(report::entry_recompile_text(e)) + "<br>";
  }
  for (const auto& a : c.advice) html += "<b>Advice:</b> " + esc(a) + "<br>";
  if (c.has_effect) {
    html += "<b>Following the advice, measured:</b><table cellspacing=0 cellpadding=2>"
            "<tr><th></th><th align=right>as run</th><th align=right>with the advice</th></tr>";
    for (const auto& row : report::dynamic_effect_rows(c.effect))
      html += "<tr><td>" + esc(row[0]) + "</td><td align=right>" + esc(row[1]) + "</td><td align=right>" + esc(row[2]) +
              "</td></tr>";
    html += "</table>" + esc(report::dynamic_effect_outputs_text(c.effect));
  } else if (c.advice.empty()) {
    html += "No dimension kept changing: nothing to advise.";
  }
  return html;
}

QString compared_html(const Selection& sel) {
  const auto& d = *sel.compare->diff;
  QStringList items;
  for (const auto& r : d.regions) {
    QString id = QString::fromStdString(r.compile_id).toHtmlEscaped();
    if (!r.in_b) {
      items << id + " only in A";
      continue;
    }
    if (!r.in_a) {
      items << id + " only in B";
      continue;
    }
    QStringList what;
    if (!r.guards_added.empty() || !r.guards_removed.empty())
      what << QString("guards +%1 / −%2").arg(r.guards_added.size()).arg(r.guards_removed.size());
    if (r.recompile_a != r.recompile_b) what << "recompile reason";
    if (!r.ops.empty()) what << QString("%1 op count(s)").arg(r.ops.size());
    if (!r.inputs.empty()) what << QString("%1 input shape(s)").arg(r.inputs.size());
    items << id + " " + what.join(", ");
  }
  QString head = QString("<b>Compared with %1</b>: ")
                     .arg(QFileInfo(QString::fromStdString(sel.compare->path)).fileName().toHtmlEscaped());
  if (items.isEmpty()) return head + QString("the %1 compiled region(s) have the same guards.").arg(d.regions_same);
  return head + items.join("; ") + QString(" (%1 the same). Pick a <i>B</i> entry on the right to see its guards added and removed.").arg(d.regions_same);
}

}  // namespace

GuardsPanel::GuardsPanel(SelectionContext* ctx, QWidget* parent)
    : SessionPanel(ctx, parent),
      treeModel_(new GuardTreeModel(this)),
      recompileModel_(new RecompileTableModel(this)),
      diffModel_(new GuardDiffModel(this)) {
  tree_ = new QTreeView(this);
  tree_->setObjectName("guardTree");
  tree_->setModel(treeModel_);
  tree_->setAlternatingRowColors(true);
  tree_->setUniformRowHeights(true);
  tree_->header()->setStretchLastSection(true);

  recompiles_ = make_row_table(this, "recompileTable");
  recompiles_->setModel(recompileModel_);

  auto* diffPage = new QWidget(this);
  before_ = new QComboBox(diffPage);
  after_ = new QComboBox(diffPage);
  before_->setObjectName("diffBefore");
  after_->setObjectName("diffAfter");
  diffSummary_ = new QLabel(diffPage);
  compared_ = new QLabel(this);
  compared_->setObjectName("guardsCompared");
  compared_->setTextFormat(Qt::RichText);
  compared_->setWordWrap(true);
  compared_->hide();
  diff_ = make_row_table(diffPage, "guardDiff");
  diff_->setModel(diffModel_);
  diff_->horizontalHeader()->setSectionResizeMode(GuardDiffModel::Change, QHeaderView::ResizeToContents);
  diff_->horizontalHeader()->setSectionResizeMode(GuardDiffModel::Before, QHeaderView::Stretch);
  diff_->horizontalHeader()->setSectionResizeMode(GuardDiffModel::After, QHeaderView::Stretch);
  auto* pick = new QHBoxLayout;
  pick->addWidget(new QLabel("Compare", diffPage));
  pick->addWidget(before_, 1);
  pick->addWidget(new QLabel("with", diffPage));
  pick->addWidget(after_, 1);
  auto* dl = new QVBoxLayout(diffPage);
  dl->setContentsMargins(2, 2, 2, 2);
  dl->addLayout(pick);
  dl->addWidget(diffSummary_);
  dl->addWidget(diff_, 1);

  limits_ = new QListWidget(this);
  limits_->setObjectName("limitEvents");
  costs_ = new QLabel(this);
  costs_->setObjectName("recompileCosts");
  costs_->setTextFormat(Qt::RichText);
  costs_->setWordWrap(true);
  costs_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
  costs_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* costsScroll = new QScrollArea(this);
  costsScroll->setWidgetResizable(true);
  costsScroll->setFrameShape(QFrame::NoFrame);
  costsScroll->setWidget(costs_);

  auto* left = new QSplitter(Qt::Vertical, this);
  left->addWidget(titled_box(this, "Cache entries per region", tree_));
  left->addWidget(titled_box(this, "Recompile-limit events", limits_));
  left->setSizes({600, 120});
  auto* right = new QSplitter(Qt::Vertical, this);
  right->addWidget(titled_box(this, "Recompile history", recompiles_));
  right->addWidget(titled_box(this, "Recompiles: what they cost", costsScroll));
  right->addWidget(titled_box(this, "Guards of two entries compared", diffPage));
  right->setSizes({200, 220, 400});
  auto* split = new QSplitter(Qt::Horizontal, this);
  split->addWidget(left);
  split->addWidget(right);
  split->setSizes({640, 640});
  auto* layout = panelLayout();
  layout->addWidget(compared_);
  layout->addWidget(split, 1);

  connect(tree_->selectionModel(), &QItemSelectionModel::currentChanged, this, [this](const QModelIndex& cur) {
    if (syncing_) return;
    std::string id = treeModel_->compileId(cur);
    if (!id.empty()) ctx_->setRegion(id);
  });
  onRowPicked(recompiles_, [this](int row) {
    const auto* e = recompileModel_->entry(row);
    if (e && ctx_->session() && find_region(*ctx_->session(), e->compile_id)) ctx_->setRegion(e->compile_id);
  });
  connect(before_, &QComboBox::currentIndexChanged, this, &GuardsPanel::updateDiff);
  connect(after_, &QComboBox::currentIndexChanged, this, &GuardsPanel::updateDiff);
  followSelection(kSessionPart | kRegionPart | kComparePart);
}

QString GuardsPanel::recompileCostsText() const { return QTextDocumentFragment::fromHtml(costs_->text()).toPlainText(); }

QString GuardsPanel::comparisonText() const {
  return compared_->isVisibleTo(this) ? QTextDocumentFragment::fromHtml(compared_->text()).toPlainText() : QString();
}

void GuardsPanel::onSelectionChanged(const Selection& sel, unsigned parts) {
  const auto* s = sel.session.get();
  if (parts & kSessionPart) {
    syncing_ = true;
    treeModel_->setSession(sel.session);
    recompileModel_->setSession(s);
    costs_->setText(recompile_costs_html(s));
    before_->clear();
    after_->clear();
    limits_->clear();
    if (s) {
      for (const auto& r : s->regions) {
        before_->addItem(QString::fromStdString(r.compile_id));
        after_->addItem(QString::fromStdString(r.compile_id));
      }
      for (const auto& e : s->events)
        if (e.kind == capture::Event::Kind::RecompileLimit || e.kind == capture::Event::Kind::EagerFallback)
          limits_->addItem(QString("%1  call %2  %3: %4")
                               .arg(QString::fromUtf8(capture::event_kind_name(e.kind)))
                               .arg(e.call)
                               .arg(QString::fromStdString(e.compile_id.empty() ? "region " + std::to_string(e.region)
                                                                                 : e.compile_id),
                                    QString::fromStdString(e.message)));
      if (limits_->count() == 0)
        limits_->addItem(s->regions.empty() ? "No compiled regions." : "No region reached the recompile limit.");
    }
    tree_->expandToDepth(0);
    for (int c = GuardTreeModel::Name; c < GuardTreeModel::Reason; ++c) tree_->resizeColumnToContents(c);
    tree_->setColumnWidth(GuardTreeModel::Name, std::max(240, std::min(tree_->columnWidth(GuardTreeModel::Name), 380)));
    recompiles_->resizeColumnsToContents();
    recompiles_->setColumnWidth(RecompileTableModel::Reason,
                                std::min(recompiles_->columnWidth(RecompileTableModel::Reason), 420));
    syncing_ = false;
  }
  const bool comparing = s && sel.compare && sel.compare->session && sel.compare->diff;
  if (parts & (kSessionPart | kComparePart)) {
    const QSignalBlocker b1(before_), b2(after_);
    for (int i = after_->count() - 1; i >= 0; --i)
      if (after_->itemText(i).startsWith(kOtherPrefix)) after_->removeItem(i);
    if (comparing)
      for (const auto& r : sel.compare->session->regions) after_->addItem(kOtherPrefix + QString::fromStdString(r.compile_id));
    compared_->setVisible(comparing);
    compared_->setText(comparing ? compared_html(sel) : QString());
  }
  if ((parts & (kRegionPart | kSessionPart | kComparePart)) && s) {
    syncing_ = true;
    QModelIndex entry = treeModel_->entryIndex(sel.compile_id);
    if (entry.isValid()) {
      tree_->expand(entry.parent());
      tree_->setCurrentIndex(entry);
      tree_->scrollTo(entry);
    }
    std::string prev = previous_entry(*s, sel.compile_id);
    syncing_ = false;
    if (sel.compile_id.empty()) return;
    if (comparing && find_region(*sel.compare->session, sel.compile_id)) {
      diffEntries(sel.compile_id, (kOtherPrefix + QString::fromStdString(sel.compile_id)).toStdString());
    } else if (!prev.empty()) {
      diffEntries(prev, sel.compile_id);
    } else {
      std::string next = next_entry(*s, sel.compile_id);  // the first entry: compare with what replaced it
      diffEntries(sel.compile_id, next.empty() ? sel.compile_id : next);
    }
  }
}

void GuardsPanel::diffEntries(const std::string& before, const std::string& after) {
  const QSignalBlocker b1(before_), b2(after_);
  before_->setCurrentText(QString::fromStdString(before));
  after_->setCurrentText(QString::fromStdString(after));
  updateDiff();
}

void GuardsPanel::updateDiff() {
  const auto* s = ctx_->session();
  const auto* a = picked_region(ctx_->current(), before_->currentText());
  const auto* b = picked_region(ctx_->current(), after_->currentText());
  if (!a || !b) {
    diffModel_->setChanges({}, "first", "second");
    diffSummary_->setText(s ? "Pick two cache entries to compare their guards." : "");
    return;
  }
  auto changes = diff_guards(a->guards, b->guards);
  int added = 0, removed = 0, changed = 0;
  for (const auto& c : changes)
    (c.kind == GuardChange::Kind::Added ? added : c.kind == GuardChange::Kind::Removed ? removed : changed)++;
  diffModel_->setChanges(std::move(changes), before_->currentText(), after_->currentText());
  QString summary = a == b ? QString("%1 is the first entry of its region; pick another entry to compare.")
                                 .arg(QString::fromStdString(a->compile_id))
                           : QString("%1 → %2: %3 changed, %4 added, %5 removed guard(s).")
                                 .arg(before_->currentText(), after_->currentText())
                                 .arg(changed)
                                 .arg(added)
                                 .arg(removed);
  if (!b->recompile_reason.empty() && a != b)
    summary += "  Recompiled because: " + QString::fromStdString(b->recompile_reason).section('\n', 0, 0);
  diffSummary_->setText(summary);
  diffSummary_->setWordWrap(true);
}

}  // namespace kiln::viewers
