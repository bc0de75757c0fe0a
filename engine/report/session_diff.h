// The comparison of two sessions (before / after, Kiln / torch.compile, this backend / that one) as
// plain values: what `kiln diff` renders (render_diff.h) and the workbench can show.
//
// diff_sessions(a, b, options)
//   post: - runs: every run of either side once, paired by mode and backend, then by mode alone
//           (an imported run against Kiln's of the same mode); a run with no partner has a null side.
//         - breaks: graph breaks of both sides, deduplicated (group_breaks) and matched by source
//           file (base name), line and reason; status Added (only in b), Removed (only in a), Both.
//         - regions: every compile id of either side, by compile id, with the guards added and removed,
//           both recompile reasons, the ops whose count differs (group_ops' names, so "aten::linear" and
//           "torch._C._nn.linear" are one op) and the graph inputs whose shape differs; only entries
//           with a difference are kept, plus a count of identical ones.
//         - structure: each side's device time by module path and by source line (module_time.h) of
//           one run: `run_a`/`run_b` name it (as find_run), else report_run() for a, and for b its
//           run of a's mode and backend when it has one with kernel time, else report_run(); module rows of both
//           sides merged by path, with inclusive times (a module's own time plus its submodules'),
//           so sides that fuse at different depths still line up at the parents.
//   pre:  both sessions outlive the result only as far as its values need: the result owns copies.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/report/module_time.h"
#include "engine/session/session.h"

namespace kiln::report {

struct DiffSide {
  std::string label;   // what the user named ("before.kiln", "logs/")
  std::string origin;  // session origin
  std::string model;
  std::string torch_version;
  std::string device;  // GPU name, "cpu" for Kiln's CPU sessions, "" unknown (an import without env)
};

struct RunPair {
  std::optional<session::Run> a, b;
};

enum class Change { Both, Added, Removed };

struct BreakChange {
  Change change = Change::Both;
  std::string where;   // "model.py:42" or "(no line)"
  std::string reason;
  std::string module;
  int hits_a = 0, hits_b = 0;
};

struct OpCount {
  std::string op;
  int a = 0, b = 0;
};

struct InputShape {
  std::string name;
  std::string a, b;  // "f32[4, 64]"; "" when absent on that side
};

struct RegionChange {
  std::string compile_id;
  bool in_a = false, in_b = false;
  std::string graph_a, graph_b;  // the stage whose ops were compared
  std::string recompile_a, recompile_b;
  std::vector<std::string> guards_added, guards_removed;
  size_t guards_a = 0, guards_b = 0;
  std::vector<OpCount> ops;          // counts that differ, sorted by op
  std::vector<InputShape> inputs;    // inputs whose shape differs
  int ops_a = 0, ops_b = 0;          // calls in the compared graphs
};

struct StructureLine {
  std::string key;   // module path or "file.py:12"; kUnattributed
  std::string code;
  int depth = 0;     // modules: components in the path
  double a_ms = -1, b_ms = -1;  // per iteration; negative when the side has no such row
  bool unattributed = false;
};

struct StructureSide {
  bool present = false;   // the session has a run with kernel time
  std::string run_label;  // "default / kiln", "imported trace"
  ModuleTime time;
  double total_ms = 0;    // kernel time per iteration
  double module_coverage = 0, line_coverage = 0;  // attributed share of total
};

struct StructureDiff {
  StructureSide a, b;
  std::vector<StructureLine> modules;  // inclusive times, tree order, unattributed last
  std::vector<StructureLine> lines;    // larger of the two sides first, unattributed last
};

struct SessionDiff {
  DiffSide a, b;
  std::vector<RunPair> runs;
  std::vector<BreakChange> breaks;
  std::vector<RegionChange> regions;
  int regions_same = 0;
  StructureDiff structure;
};

struct DiffOptions {
  std::string label_a, label_b;
  std::string run_a, run_b;  // find_run names; "" = report_run
};

SessionDiff diff_sessions(const session::Session& a, const session::Session& b, const DiffOptions& options = {});

// The op name both Kiln's and FX's graphs agree on: "aten::add.Tensor", "torch.ops.aten.add.Tensor"
// and "operator.add" → "add"; "torch._C._nn.linear" and "aten::linear" → "linear".
std::string group_op(const std::string& target);

}  // namespace kiln::report
