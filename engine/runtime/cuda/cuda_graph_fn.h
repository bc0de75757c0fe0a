// reduce-overhead: a region's compiled callable captured once into a CUDA graph with static input
// and output buffers (inputs copied in when the caller's tensors differ), replayed after that, and
// re-recorded when shapes change (at most 16 shapes kept, the one used longest ago dropped). Every
// graph of one region, across its entries, allocates from one memory pool (region_key names the
// region): the region runs one graph at a time and its outputs hold until its next call, so new
// shapes grow the pool to the largest graph's needs instead of adding a pool each. Every record,
// replay, drop and skip is logged with its reason.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/runtime/backend.h"

namespace kiln::runtime {

// inner: the callable to capture. inputs/outputs: the region's values. region_key: the region's
// identity (its RegionStatic), shared by its entries.
std::unique_ptr<CompiledFn> make_cuda_graph_fn(std::unique_ptr<CompiledFn> inner,
                                               std::vector<const torch::jit::Value*> inputs,
                                               std::vector<const torch::jit::Value*> outputs, const void* region_key);

// Runs f with the current stream set to the one stream every CUDA graph of this device is warmed up
// and captured on, ordered after the caller's stream's work and before its next. Work that precedes
// a capture (the region's first, specializing run) goes there too, so cuBLAS makes one workspace
// (per handle and stream) instead of a second one on the caller's stream. Without CUDA: f().
void on_capture_stream(const std::function<void()>& f);

// CUDA graphs recorded by these callables and alive now, in this process (0 without CUDA): what a
// profiler checks after CompiledFn::record_graphs_again (a wrapper that forgot to forward it leaves its
// graphs alive).
int64_t live_cuda_graphs();

// The captured trace replayed op by op (the eager ops of a region), as a callable: what the
// cudagraphs backend captures.
std::unique_ptr<CompiledFn> make_trace_fn(const capture::SpecializedRegion& entry);

}  // namespace kiln::runtime
