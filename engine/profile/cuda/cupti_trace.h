// CUPTI tracing: kernels (grid, block, registers, shared memory, stream, CUDA graph node), memcpy/memset,
// the runtime and driver calls that launch, copy, set or wait (the ones a device record's correlation id
// names; KILN_CUPTI_ALL_API=1 records every call, through the activity API), and on request
// synchronization and NVTX ranges, with correlation ids. The only file that includes cupti.h. One trace
// at a time per process (CUPTI's activity buffers are process-wide); records come back on the host
// trace's clock. At stop CUPTI detaches from the process (cuptiFinalize): once attached, its hooks stay on
// every CUDA call and slow whatever is measured next — except after NVTX was pointed at CUPTI, whose
// injection cannot be undone.
#pragma once

#include <chrono>
#include <string>

#include "engine/profile/gpu_activity.h"

namespace kiln::profile {

// "" when CUPTI can trace here; else why not ("no GPU driver", "CUPTI: ...").
std::string cupti_unavailable_reason();

// How the launching calls are recorded (what a device record's correlation id names):
//   Callbacks  CUPTI's callback API subscribed to the launch, copy, set and wait calls only; Kiln stamps
//              each call's entry and exit itself (same records, same correlation ids as Activity). The
//              default: the API activity kinds make CUPTI intercept every driver call (H100, host-bound
//              default-mode calls traced: ResNet-18 +60 % with Activity, +20 % with Callbacks, +20 % with
//              device records alone; mobilenet +60 / +23 / +19 %). Falls back to Activity when another
//              tool holds CUPTI's one subscriber.
//   Activity   CUPTI's runtime and driver API activity kinds, the calls not wanted switched off one by one
//   None       no API records: device records only (kernels are then attributed by name, not by call)
enum class CuptiApiRecords { Activity, Callbacks, None };

struct CuptiOptions {
  CuptiApiRecords api = CuptiApiRecords::Callbacks;
  bool markers = false;  // NVTX ranges (Kiln's spans, when HostTrace::set_nvtx is on): KILN_CUPTI_MARKERS=1
  // Synchronization records (KILN_CUPTI_SYNCS=1): CUPTI then intercepts every driver call, which cost
  // +35 % on host-bound calls (H100, ResNet-18 default mode: +49 % traced with them, +14 % without).
  bool syncs = false;
  // CUDA graph launches traced as one record each (CUPTI's graph-level records): the kernels a graph
  // replays are then not recorded one by one, which on GPUs before Blackwell costs about 1 µs of device
  // time per kernel node (bench/gpu/probes/cupti_graph.cu). Work launched outside graphs is recorded as
  // before. Only for graphs instantiated after the trace started: CUDA 13.0's CUPTI crashes (SIGSEGV in
  // cuGraphLaunch) replaying a graph instantiated before graph-level records were enabled, so the
  // caller records its graphs again under the trace (kiln profile: commands/profile_model.cpp).
  bool graph_level = false;
  // Per-kernel device records (CUPTI's concurrent-kernel kind). Off with graph_level: graphs are timed
  // whole and kernels outside graphs go unrecorded.
  bool kernel_records = true;
};

// The options `kiln profile` traces with; KILN_CUPTI_API=activity|callbacks|none overrides the API records
// (KILN_CUPTI_ALL_API=1 alone means activity).
CuptiOptions default_cupti_options();
const char* cupti_api_records_name(CuptiApiRecords a);  // "activity", "callbacks", "none"

class CuptiTrace {
 public:
  // Starts tracing. `host_origin` is the steady-clock instant the HostTrace calls 0, so device
  // records line up with host spans. Throws kiln::Error when tracing cannot start.
  explicit CuptiTrace(std::chrono::steady_clock::time_point host_origin, const CuptiOptions& options = default_cupti_options());
  ~CuptiTrace();  // stops tracing if stop() was not called
  CuptiTrace(const CuptiTrace&) = delete;
  CuptiTrace& operator=(const CuptiTrace&) = delete;

  // Flushes every buffer and returns all records (dropped-record counts included).
  GpuTrace stop();

 private:
  bool running_ = false;
  CuptiOptions options_;
  int64_t offset_ns_ = 0;  // host trace ns = CUPTI timestamp + offset
};

}  // namespace kiln::profile
