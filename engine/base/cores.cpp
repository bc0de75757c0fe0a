#include "engine/base/cores.h"

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>
#include <thread>

namespace kiln {

namespace {

// The cgroup v2 quota of this process's group ("max" or absent: none), in processors, rounded up.
unsigned quota_cores() {
  std::ifstream in("/sys/fs/cgroup/cpu.max");
  std::string quota;
  double period = 0;
  if (!(in >> quota >> period) || quota == "max" || period <= 0) return 0;
  double q = 0;
  try {
    q = std::stod(quota);
  } catch (...) {
    return 0;
  }
  if (!(q > 0)) return 0;
  return static_cast<unsigned>(std::max(1.0, std::ceil(q / period)));
}

}  // namespace

unsigned usable_cores() {
  unsigned n = std::max(1u, std::thread::hardware_concurrency());
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    const int allowed = CPU_COUNT(&set);
    if (allowed > 0) n = std::min(n, static_cast<unsigned>(allowed));
  }
  if (const unsigned q = quota_cores()) n = std::min(n, q);
  return std::max(1u, n);
}

}  // namespace kiln
