// Buffer planning for one fused region, at compile time (as Inductor's memory planning does): the
// lifetime of every buffer a step writes, and slots that buffers of the same size, dtype and layout
// share when their lifetimes do not overlap.
//
// plan_memory(program)
//   post: one PlannedBuffer per computation a step writes (a kernel's realized computations, an
//         extern's result), first = the step that writes it (for a kernel launched right after an
//         extern — a GEMM epilogue — the extern's step: the extern may launch it), last = the last
//         step that reads it (or reads a view that is its buffer permuted, FusedProgram::buffer_views; such a
//         view has no buffer of its own), or steps.size() for a region output (it outlives the region).
//         Two buffers share a slot only if their sizes (symbolically), dtypes and layouts are equal
//         and [first, last] intervals are disjoint, never a region output with anything after it —
//         except in place: a pointwise kernel's result shares the slot of a buffer of the same shape
//         that only it reads, only at each element's own position, and whose last use is that kernel
//         (a row kernel's stage: of a buffer read besides only by the reductions before it, and of
//         as many bytes in the kernel's variables where the stage folds the rows).
//         alloc_before[s] lists the buffers created before step s, free_after[s] those whose last
//         reader is s (their memory goes back to the slot, or to the allocator).
// memory_plan_text(program, plan, bindings)
//   post: the plan for the dumps: each slot with its buffers and lifetimes, and the planned peak
//         (bytes live at the worst step) against the sum of all buffers (no reuse), evaluated with
//         `bindings` for symbolic sizes ("-" where a size is unknown).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/fusion/schedule.h"

namespace kiln::fusion {

struct PlannedBuffer {
  int comp = -1;
  int first = -1, last = -1;
  bool output = false;
  int slot = -1;
  bool handed_on = false;  // the next buffer of its slot, made at the very next step, takes its memory
  int in_place_of = -1;    // a pointwise result written over this buffer it reads, which dies there (viewed in its sizes)
};

struct MemoryPlan {
  std::vector<PlannedBuffer> buffers;
  std::vector<std::vector<int>> alloc_before;  // per step: computations
  std::vector<std::vector<int>> free_after;    // per step: computations
  int slots = 0;

  const PlannedBuffer* buffer_of(int comp) const;
};

// gemm_epilogues: a kernel right after an extern may be launched from inside it (max-autotune's GEMM
// template runs it as its epilogue), so its buffers are made before that extern; otherwise each
// buffer is made just before the step that writes it.
MemoryPlan plan_memory(const FusedProgram& p, bool gemm_epilogues = false);

// Bytes of computation c's buffer, or -1 when a size is unknown under `bindings`.
int64_t buffer_bytes(const LoopProgram& program, int c, const std::map<std::string, int64_t>& bindings);

struct PlannedPeak {
  int64_t peak = 0;       // most bytes live at once with the plan
  int64_t unplanned = 0;  // every buffer at once (all allocated up front, none freed)
  int step = -1;          // where the peak is
};
PlannedPeak planned_peak(const FusedProgram& p, const MemoryPlan& plan, const std::map<std::string, int64_t>& bindings);

std::string memory_plan_text(const FusedProgram& p, const MemoryPlan& plan,
                             const std::map<std::string, int64_t>& bindings = {});

}  // namespace kiln::fusion
