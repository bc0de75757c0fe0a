// One home for kernel time share: the workbench's Kernels panel and the reports read it here.
// kernel_times(session, run): how long each kernel ran in one run, from the run's timeline events
// that name a kernel (TimelineEvent::kernel; on a GPU the device kernels, on the CPU Kiln's host
// spans of its C++ kernels).
//
// post: one entry per (compile id, kernel name) — names repeat across regions — with total
//       duration and launch count; `share` is the kernel's fraction of the summed time of all such
//       events of the run (0 when the run has none). run < 0: events of every run.
// find_kernel_time(times, kernel): the entry of that kernel's region, else of an event that
//       carried no compile id; nullptr when it did not run.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "engine/session/session.h"

namespace kiln::report {

struct KernelTime {
  int64_t total_ns = 0;
  int launches = 0;
  double share = 0;
};

using KernelTimes = std::map<std::pair<std::string, std::string>, KernelTime>;  // (compile id, name)

KernelTimes kernel_times(const session::Session& s, int run);
const KernelTime* find_kernel_time(const KernelTimes& times, const session::Kernel& k);

}  // namespace kiln::report
