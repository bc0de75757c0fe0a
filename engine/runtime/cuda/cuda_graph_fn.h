// reduce-overhead: a region's compiled callable captured once into a CUDA graph with static input
// and output buffers (inputs copied in when the caller's tensors differ), replayed after that, and
// re-recorded when shapes change. Every record, replay and skip is logged with its reason.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/runtime/backend.h"

namespace kiln::runtime {

// inner: the callable to capture. inputs/outputs: the region's values.
std::unique_ptr<CompiledFn> make_cuda_graph_fn(std::unique_ptr<CompiledFn> inner,
                                               std::vector<const torch::jit::Value*> inputs,
                                               std::vector<const torch::jit::Value*> outputs);

// The captured trace replayed op by op (the eager ops of a region), as a callable: what the
// cudagraphs backend captures.
std::unique_ptr<CompiledFn> make_trace_fn(const capture::SpecializedRegion& entry);

}  // namespace kiln::runtime
