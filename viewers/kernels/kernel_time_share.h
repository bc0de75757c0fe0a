// kernel_times(session, run): how long each kernel ran in one run, from the run's timeline events
// that name a kernel (TimelineEvent::kernel; on a GPU the device kernels, on the CPU Kiln's host
// spans of its C++ kernels).
//
// post: one entry per kernel name with total duration and launch count; `share` is the kernel's
//       fraction of the summed time of all such events of the run (0 when the run has none).
//       run < 0: events of every run.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "engine/session/session.h"

namespace kiln::viewers {

struct KernelTime {
  int64_t total_ns = 0;
  int launches = 0;
  double share = 0;
};

std::map<std::string, KernelTime> kernel_times(const session::Session& s, int run);

}  // namespace kiln::viewers
