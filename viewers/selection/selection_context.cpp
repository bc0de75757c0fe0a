#include "viewers/selection/selection_context.h"

#include <algorithm>

namespace kiln::viewers {

namespace {
// Sets `field` to `value`; answers `part` when that changed it, else 0 (nothing to publish).
template <typename T>
unsigned assign(T& field, const T& value, unsigned part) {
  if (field == value) return 0;
  field = value;
  return part;
}
}  // namespace

const session::Kernel* kernel_for_node(const session::Session& s, const std::string& compile_id,
                                       const std::string& node) {
  if (node.empty()) return nullptr;
  for (const auto& k : s.kernels) {
    if (!compile_id.empty() && !k.compile_id.empty() && k.compile_id != compile_id) continue;
    if (std::find(k.nodes.begin(), k.nodes.end(), node) != k.nodes.end()) return &k;
  }
  return nullptr;
}

const session::Kernel* find_kernel(const session::Session& s, const std::string& name, const std::string& compile_id) {
  const session::Kernel* first = nullptr;
  for (const auto& k : s.kernels)
    if (k.name == name) {
      if (compile_id.empty() || k.compile_id == compile_id) return &k;
      if (!first) first = &k;
    }
  return first;
}

const session::CompiledRegion* find_region(const session::Session& s, const std::string& compile_id) {
  for (const auto& r : s.regions)
    if (r.compile_id == compile_id) return &r;
  return nullptr;
}

SelectionContext::SelectionContext(QObject* parent) : QObject(parent) {}

void SelectionContext::publish(unsigned parts) {
  if (parts) Q_EMIT selectionChanged(sel_, parts);
}

void SelectionContext::setSession(std::shared_ptr<const session::Session> s, const std::string& path) {
  sel_ = Selection{};
  sel_.session = std::move(s);
  sel_.session_path = path;
  if (const auto* ss = sel_.session.get()) {
    if (!ss->regions.empty()) {
      sel_.compile_id = ss->regions.front().compile_id;
      if (!ss->regions.front().graphs.empty()) sel_.stage = ss->regions.front().graphs.front().stage;
    }
    for (const auto& r : ss->runs)
      if (r.status == "ok") {
        sel_.run = r.id;
        break;
      }
  }
  publish(kSessionPart | kRunPart | kRegionPart | kNodePart | kKernelPart | kRangePart | kComparePart);
}

void SelectionContext::setRun(int run_id) { publish(assign(sel_.run, run_id, kRunPart)); }

void SelectionContext::setRegion(const std::string& compile_id, const std::string& stage) {
  unsigned parts = assign(sel_.compile_id, compile_id, kRegionPart);
  if (parts) parts |= assign(sel_.node, std::string(), kNodePart);  // a node of another region
  std::string st = stage;
  if (st.empty() && session()) {
    if (const auto* r = find_region(*session(), compile_id)) {
      bool has = false;
      for (const auto& g : r->graphs) has |= g.stage == sel_.stage;
      st = has ? sel_.stage : (r->graphs.empty() ? "" : r->graphs.front().stage);
    }
  }
  parts |= assign(sel_.stage, st, kRegionPart);
  publish(parts);
}

void SelectionContext::setStage(const std::string& stage) { publish(assign(sel_.stage, stage, kRegionPart)); }

void SelectionContext::selectNode(const std::string& compile_id, const std::string& node) {
  unsigned parts = assign(sel_.compile_id, compile_id, kRegionPart) | assign(sel_.node, node, kNodePart);
  std::string kernel;
  if (session())
    if (const auto* k = kernel_for_node(*session(), compile_id, node)) kernel = k->name;
  parts |= assign(sel_.kernel, kernel, kKernelPart);
  publish(parts);
}

void SelectionContext::selectKernel(const std::string& kernel, const std::string& compile_id) {
  unsigned parts = assign(sel_.kernel, kernel, kKernelPart);
  const session::Kernel* k = session() ? find_kernel(*session(), kernel, compile_id.empty() ? sel_.compile_id : compile_id)
                                       : nullptr;
  if (k && !k->compile_id.empty() && k->compile_id != sel_.compile_id && find_region(*session(), k->compile_id)) {
    sel_.compile_id = k->compile_id;
    parts |= kRegionPart;
  }
  if (!sel_.node.empty() && session()) {
    if (!k || std::find(k->nodes.begin(), k->nodes.end(), sel_.node) == k->nodes.end()) {
      sel_.node.clear();
      parts |= kNodePart;
    }
  }
  publish(parts);
}

void SelectionContext::setTimeRange(TimeRange r) { publish(assign(sel_.range, r, kRangePart)); }

void SelectionContext::setComparison(std::shared_ptr<const Comparison> c) {
  publish(assign(sel_.compare, std::move(c), kComparePart));
}

}  // namespace kiln::viewers
