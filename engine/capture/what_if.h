// What-if rewrites: the frozen forward graph with chosen graph breaks removed where that is sound, so
// that the runtime can measure what fixing a break would gain (`kiln explain --what-if`).
//
// plan_break_removals(graph, partition, examples)
//   pre:  partition = partition_graph(graph, ...); examples: self and zero or more calls' inputs.
//   post: one BreakRemoval per partition.breaks entry, in the same order. Removable:
//         - prim::Print: dropped (the program no longer prints that text);
//         - a scalar read (item, Float, Int, Bool, ScalarImplicit, FloatImplicit, IntImplicit of a tensor)
//           whose number flows, through number conversions (Float, Int, Bool) only, into ops that have an
//           overload taking a tensor in that position and returning the same kinds of values: kept as a
//           0-d tensor. item() and ScalarImplicit keep the tensor's dtype; Float makes float64, Int int64
//           (truncating, as int() does), Bool bool: the dtypes PyTorch wraps Python numbers in, so type
//           promotion with other tensors is the number's (one exception: an integer tensor combined with a
//           float read from a float64 tensor promotes to float64, not the default float dtype; the check
//           against eager reports such a difference);
//         - a prim::If on bool(t) or is_nonzero(t) of a tensor t (or its `not`) whose blocks hold no graph
//           break, no side effect, no in-place op, no raise and no opaque call, and whose outputs are
//           tensors of one shape and dtype in both blocks for every example (checked by running a copy of
//           the program that returns what both blocks yield; only for an if at the top level of forward):
//           both blocks run and where(t != 0, then, else) selects each output.
//         Anything else is not removable, with why_not one line in the user's terms.
//
// remove_breaks(graph, sources, breaks, examples)
//   pre:  as above; breaks: indices into partition_graph(graph)'s breaks.
//   post: a new graph (graph itself is not changed) with each listed break's rewrite applied and the
//         nodes the rewrites left unused removed; new nodes carry the source line of the node they
//         replace. partition_graph of the result no longer has those breaks.
//   error: kiln::Error when a listed break is not removable (naming it and why) or out of range.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/capture/partition.h"

namespace kiln::capture {

struct BreakRemoval {
  enum class Kind { None, DropPrint, ScalarAsTensor, BranchAsWhere };
  Kind kind = Kind::None;
  std::string change;   // what the rewrite does, one line (removable)
  std::string why_not;  // why it cannot be removed soundly, one line (not removable)
  bool removable() const { return kind != Kind::None; }
};
// Inputs the checks run on: the frozen module (forward's self) and one or more calls' inputs.
struct WhatIfExamples {
  c10::IValue self;
  std::vector<std::vector<at::Tensor>> calls;
};

const char* removal_kind_name(BreakRemoval::Kind k);  // "drop_print", "scalar_as_tensor", "branch_as_where", "none"

std::vector<BreakRemoval> plan_break_removals(const torch::jit::Graph& graph, const Partition& partition,
                                              const WhatIfExamples& examples);

std::shared_ptr<torch::jit::Graph> remove_breaks(const torch::jit::Graph& graph, SourceFiles& sources,
                                                 const std::vector<int>& breaks,
                                                 const WhatIfExamples& examples);

}  // namespace kiln::capture
