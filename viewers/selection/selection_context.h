// The one selection every panel follows: current session, run (mode/backend), region cache
// entry, stage, node, kernel and time range. Panels never call each other; they read the
// current Selection and react to selectionChanged, and write through the setters below.
#pragma once

#include <QObject>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/api/report.h"
#include "engine/api/session.h"

namespace kiln::viewers {

struct TimeRange {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  bool empty() const { return end_ns <= start_ns; }
  friend bool operator==(const TimeRange& a, const TimeRange& b) {
    return a.start_ns == b.start_ns && a.end_ns == b.end_ns;
  }
};

// Which part of the selection a change touched (a bit set).
enum SelectionPart : unsigned {
  kSessionPart = 1u << 0,
  kRunPart = 1u << 1,
  kRegionPart = 1u << 2,  // compile_id and stage
  kNodePart = 1u << 3,
  kKernelPart = 1u << 4,
  kRangePart = 1u << 5,
  kComparePart = 1u << 6,  // the session compared with the shown one
};

// A second session the shown one is compared with (File > Compare with...): the session, where it
// came from, and the engine's comparison of the two (report::diff_sessions, the shown session as
// side A, this one as side B).
struct Comparison {
  std::shared_ptr<const session::Session> session;
  std::string path;
  std::shared_ptr<const report::SessionDiff> diff;
};

struct Selection {
  std::shared_ptr<const session::Session> session;  // null: nothing open
  std::string session_path;                          // file it came from (for titles, export)
  int run = -1;                 // session::Run::id in focus (-1: none)
  std::string compile_id;       // session::CompiledRegion::compile_id, "[0/0]"
  std::string stage;            // session::StageGraph::stage shown by the graph view
  std::string node;             // graph node name
  std::string kernel;           // session::Kernel::name
  TimeRange range;              // visible/selected time range on the timeline
  std::shared_ptr<const Comparison> compare;  // null: nothing compared (a new session clears it)
};

// Provenance lookups over a session (pure functions, tested without widgets).
// The first kernel of `compile_id` (any compile id when empty) whose nodes contain `node`.
const session::Kernel* kernel_for_node(const session::Session& s, const std::string& compile_id,
                                       const std::string& node);
// Kernel names repeat across regions (k0_… in [0/0] and in [1/0]): with a compile id the kernel of
// that region, else the first with the name.
const session::Kernel* find_kernel(const session::Session& s, const std::string& name,
                                   const std::string& compile_id = "");
const session::CompiledRegion* find_region(const session::Session& s, const std::string& compile_id);

class SelectionContext : public QObject {
  Q_OBJECT
 public:
  explicit SelectionContext(QObject* parent = nullptr);
  const Selection& current() const { return sel_; }
  const session::Session* session() const { return sel_.session.get(); }

  // Replaces the session; picks the first region, its first stage and the first ok run.
  void setSession(std::shared_ptr<const session::Session> s, const std::string& path = "");
  void setRun(int run_id);
  void setRegion(const std::string& compile_id, const std::string& stage = "");
  void setStage(const std::string& stage);
  // Selects a node of a region; the kernel that came from it (provenance) follows.
  void selectNode(const std::string& compile_id, const std::string& node);
  // Selects a kernel (of region `compile_id` when given: names repeat across regions); its region
  // follows, the node is cleared unless it came from that kernel (panels highlight its nodes).
  void selectKernel(const std::string& kernel, const std::string& compile_id = "");
  void setTimeRange(TimeRange r);
  // Compares the shown session with another (null ends the comparison).
  void setComparison(std::shared_ptr<const Comparison> c);

 Q_SIGNALS:
  // `parts`: the SelectionPart bits that changed.
  void selectionChanged(const kiln::viewers::Selection& sel, unsigned parts);

 private:
  void publish(unsigned parts);
  Selection sel_;
};

}  // namespace kiln::viewers
