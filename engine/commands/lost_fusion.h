// What a graph break costs in fusion: the kernels Kiln's scheduler would make one across the break
// if the two regions it separates were one, measured. No LibTorch types: the CLI includes this
// through engine/api.
//
// measure_lost_fusion(model, calls, options, rounds, seed)
//   pre:  calls as explain_model takes them; rounds >= 1.
//   post: one LostFusion per break of the captured program (partition order). The program is
//         compiled with the kiln backend (options' mode and dynamic kept) as it is and, per break,
//         with the two regions joined: the break removed as capture/what_if removes it (a print
//         dropped, a scalar read kept as a 0-d tensor), so lowering and the scheduler see one graph.
//         A kernel of the joined program that computes nodes of both regions (matched by op and
//         source position, a position both regions hold being ignored) fuses across the break. The
//         kernels compared are, before: the two regions' kernels that compute any node of those
//         fused kernels; after: the joined program's kernels that compute any node of those. Both
//         programs run on the same inputs in one process, warmed up by one pass through the calls,
//         then `rounds` passes with the programs taking turns; a kernel's time is the median over
//         the passes of its host spans' time per call (CPU kernels run on the calling thread).
//         lost_ms = before's time - after's time. No kernel fusing across: measured, lost_ms 0.
//         Not measured, with the reason, where the regions cannot be joined: a break not between two
//         compiled regions, a break what_if cannot remove (a data-dependent loop, an opaque call,
//         ...), a data-dependent if (joined only by running both branches, other work than either
//         side's), a joined program that fails to compile or run, or a model on another device.
//   error: kiln::Error for no calls or rounds < 1.
// apply_lost_fusion(costs, lost)
//   post: each cost whose site (break id, reason, file, line) has a LostFusion gets its lost_fusion_*
//         fields; a measured loss is added to total_ms and share recomputed; costs re-sorted, most
//         costly first.
#pragma once

#include <string>
#include <vector>

#include "engine/capture/capture_types.h"
#include "engine/ir/input_spec.h"
#include "engine/model/model.h"
#include "engine/session/session.h"

namespace kiln::runtime {

struct FusedAcross {
  std::string fused;                  // the joined program's kernel: "k0_add [0/0]"
  std::vector<std::string> before;    // the separate kernels it replaces: "k0_mul [0/0]", "k0_add [1/0]"
};

struct LostFusion {
  capture::GraphBreak info;
  bool measured = false;
  std::string unmeasured;             // why not, when not measured
  std::vector<FusedAcross> fused;     // empty when measured and nothing fuses across
  std::vector<std::string> compared_before, compared_after;  // the kernels timed on each side
  double before_ms = 0;               // per call
  double after_ms = 0;                // per call
  double lost_ms = 0;                 // before_ms - after_ms
  // "k0_mul [0/0] + k0_add [1/0] -> k0_add [0/0]" for each kernel fusing across, "; "-separated.
  std::string text() const;
};

std::vector<LostFusion> measure_lost_fusion(const model::Model& model, const std::vector<std::vector<InputSpec>>& calls,
                                            const capture::CompileOptions& options, int rounds = 20,
                                            uint64_t seed = 0);

void apply_lost_fusion(std::vector<session::BreakCost>& costs, const std::vector<LostFusion>& lost);

}  // namespace kiln::runtime
