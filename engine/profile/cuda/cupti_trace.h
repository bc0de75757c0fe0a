// CUPTI Activity API tracing: kernels (grid, block, registers, shared memory, stream, CUDA graph
// node), memcpy/memset, the runtime and driver calls that launch, copy, set or wait (the ones a
// device record's correlation id names; KILN_CUPTI_ALL_API=1 records every call), synchronization
// and NVTX ranges, with correlation ids. The only file that includes cupti.h. One trace at a time per process (CUPTI's
// activity buffers are process-wide); records come back on the host trace's clock.
#pragma once

#include <chrono>
#include <string>

#include "engine/profile/gpu_activity.h"

namespace kiln::profile {

// "" when CUPTI can trace here; else why not ("no GPU driver", "CUPTI: ...").
std::string cupti_unavailable_reason();

class CuptiTrace {
 public:
  // Starts tracing. `host_origin` is the steady-clock instant the HostTrace calls 0, so device
  // records line up with host spans. Throws kiln::Error when tracing cannot start.
  explicit CuptiTrace(std::chrono::steady_clock::time_point host_origin);
  ~CuptiTrace();  // stops tracing if stop() was not called
  CuptiTrace(const CuptiTrace&) = delete;
  CuptiTrace& operator=(const CuptiTrace&) = delete;

  // Flushes every buffer and returns all records (dropped-record counts included).
  GpuTrace stop();

 private:
  bool running_ = false;
  int64_t offset_ns_ = 0;  // host trace ns = CUPTI timestamp + offset
};

}  // namespace kiln::profile
