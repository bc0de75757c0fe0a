#include "viewers/kernels/kernel_time_share.h"

namespace kiln::viewers {

std::map<std::string, KernelTime> kernel_times(const session::Session& s, int run) {
  std::map<std::string, KernelTime> out;
  int64_t total = 0;
  for (const auto& e : s.timeline) {
    if (e.kernel.empty() || (run >= 0 && e.run != run) || e.dur_ns <= 0) continue;
    auto& t = out[e.kernel];
    t.total_ns += e.dur_ns;
    ++t.launches;
    total += e.dur_ns;
  }
  if (total > 0)
    for (auto& [name, t] : out) t.share = double(t.total_ns) / double(total);
  return out;
}

}  // namespace kiln::viewers
