// A backend that wraps another and records what every compiled region computed: the region, the
// captured entry, the kernels its backend produced, and the values it read and wrote on each run
// (copied, so later in-place ops cannot change them). The accuracy checker runs a model through it.
// Kernel buffers of Kiln's lowered regions are poisoned (NaN-filled) before every run, so a
// kernel that writes nothing cannot pass by finding right values left in reused memory.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/runtime/backend.h"

namespace kiln::runtime {

// One compile of one region by the wrapped backend.
struct RecordedCompile {
  const capture::RegionStatic* region = nullptr;       // the partition's region (owned by the runtime)
  capture::SpecializedRegion entry;                        // the captured entry compiled
  std::vector<records::Kernel> kernels;                 // what the backend reported
  CompiledFn* fn = nullptr;                             // the wrapped backend's callable (owned by the runtime)
};

// One run of a compiled region.
struct RegionRun {
  std::shared_ptr<const RecordedCompile> compiled;
  std::vector<c10::IValue> inputs;   // region.inputs' values before the run
  std::vector<c10::IValue> outputs;  // region.outputs' values after it
};

using RegionRunLog = std::shared_ptr<std::vector<RegionRun>>;

// Wraps `inner`; every run of a region it compiled is appended to `log`, in execution order.
std::unique_ptr<Backend> make_recording_backend(std::unique_ptr<Backend> inner, RegionRunLog log);

}  // namespace kiln::runtime
