// Guard checks: whether a specialized region still fits the current inputs, in Dynamo's words.
// check_guards(entry, inputs)
//   pre:  inputs line up with entry.inputs (the region's inputs, in order).
//   post: an empty failure when every guard holds (dtype, device, rank, sizes and symbolic
//         ranges, strides or contiguity, requires_grad, specialized scalars, the shape decisions
//         made while specializing, grad mode); otherwise the first failing guard. The time taken
//         is added to entry.info.guards.
#pragma once

#include <string>
#include <vector>

#include "engine/capture/specialize.h"

namespace kiln::capture {

struct GuardFailure {
  std::string text;  // Dynamo's words: "tensor 'x' size mismatch at index 0. expected 4, actual 8"
  int input = -1;    // for size mismatches: which input and dim (drives automatic dynamic shapes)
  int dim = -1;
  bool failed() const { return !text.empty(); }
};

// Checks a compiled region's guards against the current inputs (timed into the entry's GuardSet).
GuardFailure check_guards(SpecializedRegion& entry, const std::vector<c10::IValue>& inputs);

}  // namespace kiln::capture
