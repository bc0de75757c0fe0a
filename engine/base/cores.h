// usable_cores(): the processors this process may run on: the machine's, fewer when its CPU affinity
// (taskset, cpusets) or its cgroup's CPU quota (cpu.max: a container's --cpus) allows fewer; at
// least 1, read anew at each call (a system call and a small file). What the work split over threads
// (a large import's parts, its encoders) is sized by: std::thread::hardware_concurrency() counts the
// machine's processors whatever the process may use (sixteen threads for two allowed cores).
#pragma once

namespace kiln {

unsigned usable_cores();

}  // namespace kiln
