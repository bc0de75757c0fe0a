// The kernel-level step of the accuracy checker: runs one compiled region again on the inputs it
// saw, kernel by kernel, and compares every kernel's outputs with the eager values of the graph
// nodes that kernel produced.
//
// bisect_kernels(fn, entry, region, interp, inputs, reference, kernels, rtol, atol)
//   pre:  fn is the region's compiled callable (Kiln's lowered kernels), inputs the values of
//         region.inputs it ran on; `reference` holds the eager value of every TorchScript value
//         of the region, computed node by node from the same inputs (capture::run_trace).
//   post: one KernelCheck per kernel, in run order. Before each kernel (and extern call) runs,
//         every buffer it reads that has an eager counterpart is overwritten with the eager value,
//         so an error upstream cannot hide or imitate the first culprit; the buffers it writes
//         start NaN-filled, so a kernel that writes nothing is caught. Outputs without an eager
//         counterpart (a reduction inside a decomposed op) are counted as unchecked: a wrong one
//         shows in the kernel that reads it.
#pragma once

#include <string>
#include <vector>

#include "engine/runtime/compare_values.h"
#include "engine/runtime/lowered_region.h"
#include "engine/session/session.h"

namespace kiln::runtime {

struct KernelCheck {
  std::string name;                // "k1_add"
  std::vector<std::string> nodes;  // the graph nodes fused into it
  std::vector<ValueDiff> outputs;  // one per output with an eager counterpart (named by its node)
  int unchecked = 0;               // outputs without one
  bool ok = true;
  std::string source;              // the kernel's generated source, with its comment block
};

std::vector<KernelCheck> bisect_kernels(LoweredRegionFn& fn, const capture::SpecializedRegion& entry,
                                        const capture::RegionStatic& region, capture::Interpreter& interp,
                                        const std::vector<c10::IValue>& inputs,
                                        const capture::Interpreter::Env& reference,
                                        const std::vector<session::Kernel>& kernels, double rtol, double atol);

}  // namespace kiln::runtime
