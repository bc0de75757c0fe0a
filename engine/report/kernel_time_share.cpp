#include "engine/report/kernel_time_share.h"

namespace kiln::report {

KernelTimes kernel_times(const session::Session& s, int run) {
  KernelTimes out;
  int64_t total = 0;
  for (const auto& e : s.timeline) {
    if (e.kernel.empty() || (run >= 0 && e.run != run) || e.dur_ns <= 0) continue;
    auto& t = out[{e.compile_id, e.kernel}];
    t.total_ns += e.dur_ns;
    ++t.launches;
    total += e.dur_ns;
  }
  if (total > 0)
    for (auto& [key, t] : out) t.share = double(t.total_ns) / double(total);
  return out;
}

const KernelTime* find_kernel_time(const KernelTimes& times, const session::Kernel& k) {
  auto it = times.find({k.compile_id, k.name});
  if (it == times.end()) it = times.find({std::string(), k.name});
  return it == times.end() ? nullptr : &it->second;
}

}  // namespace kiln::report
