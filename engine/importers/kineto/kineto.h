// import_kineto_trace: a PyTorch profiler trace (Kineto's Chrome-trace JSON, optionally gzipped)
// → one Session, streamed: the file is never held whole.
//
// Timeline: every "X" (and paired "B"/"E") event and every instant becomes a TimelineEvent at
// epoch ns (baseTimeNanoseconds + ts). CPU events sit on lane "host:<tid>", GPU events (kernel,
// gpu_memcpy, gpu_memset, gpu_user_annotation) on "cuda:<device>/stream <stream>". correlation is
// CUPTI's (runtime/driver calls and the GPU work they launched); GPU events get "cpu_op" (the op with
// their "External id") and "launch" (the runtime call) added to args_json. Missing correlations are
// recovered from "ac2g" flow events.
// torch.compile markers: "Torch-Compiled Region: f/c" → category "region", compile_id "[f/c]" (and a
// CompiledRegion with its call count); "TorchDynamo Cache Lookup" → "guard"; "## Call CompiledFxGraph
// <hash> ##" → "compiled_graph"; triton_* kernels → TimelineEvent::kernel and one Kernel record each
// (no source: join.h supplies it from a TORCH_TRACE import); cudaGraphLaunch's kernels get
// "cuda_graph": true.
// Runs: one per ProfilerStep#N (events assigned by time, GPU work by its launch), else one run
// "imported" for the whole trace; each with kernel count, GPU busy fraction, mean launch gap, guard
// time and peak allocated memory ([memory] events).
// A large file is read by several threads, one part each (every part after the first from an element
// boundary guessed in the file and checked by the part before it; a wrong guess costs time, never
// events).
// Never fatal past opening the file: corrupt events, unsupported phases and a cut file are counted
// in import_notes.
//
// error: kiln::Error naming the file when it cannot be opened or holds no Chrome trace at all.
#pragma once

#include <cstdint>
#include <string>

#include "engine/session/session.h"

namespace kiln::importers {

struct KinetoFacts {  // what the import saw besides the session
  int64_t pid = -1;   // the profiled process (first CPU event's pid)
  int64_t events = 0;
  uint64_t bytes = 0;  // bytes read from disk
  int parts = 1;       // how many threads read a part each
};

// Plain (not gzipped) files of split_from_bytes or more are read in parts by several threads: one
// part per core (at most kKinetoMaxParts), none smaller than half of split_from_bytes, or max_parts
// when given; the session is the same either way. split_from_bytes 0: one thread always.
constexpr int64_t kKinetoSplitBytes = int64_t(64) << 20;
constexpr int kKinetoMaxParts = 16;
session::Session import_kineto_trace(const std::string& path, KinetoFacts* facts = nullptr,
                                     int64_t split_from_bytes = kKinetoSplitBytes, int max_parts = 0);

}  // namespace kiln::importers
