// kiln profile's traced window on a GPU: how CUPTI records it, and the kernel-detail iterations after it.
//
// start_window_trace(origin, record_graphs_again, fn, graph_level)
//   In a CUDA-graph mode (record_graphs_again set, unless KILN_CUPTI_GRAPHS=nodes) the window records each
//   graph's execution whole, one record per replay, kernels outside graphs one by one: per-kernel records
//   cost a Hopper GPU ~1 µs of device time per graph node (H200: replays +26 to +47 %; whole, +4 to +8 %).
//   CUDA 13.0's CUPTI crashes replaying a graph instantiated before graph-level records were enabled, so the
//   runtime's graphs are dropped before the trace starts and recorded again under it by one call of fn
//   (its spans kept out of the window). In every mode that call is made: it also pays CUPTI's first launch of
//   each kernel under a trace, which would otherwise be the window's first iteration (1.3-2.4 ms more on an
//   H200). post: the started trace, its records so far the aside call's (the caller drops them); graph_level
//   says whether it records graphs whole. Throws kiln::Error when CUPTI cannot start.
// kernel_detail(origin, record_graphs_again, fn, iterations)
//   pre: a graph-level window was traced and stopped. The graphs are made again with no tracer attached
//   (one call of fn aside), a second call aside under the trace (CUPTI's first launches), then `iterations`
//   calls of fn, each in a "detail" span named "kernel detail N", record every kernel. post: their trace, its
//   records the iterations' only (error set when CUPTI could not start: no iterations then), each call's time,
//   and from_ns: the host trace's clock when they began (spans from then on are theirs).
// sync_device(t): waits for the device t lives on (nothing on the CPU).
// OpSpanRecorder(ops, origin): while it lives, this thread's LibTorch ops (the eager baseline, externs inside
//   compiled runs) are recorded into ops (ns since origin; end_ns -1 until the op ends) and each op's
//   allocations are booked to it (memory_tracker.h); the window's op lane, and what the benchmark times alone.
#pragma once

#include "kiln_build_config.h"

#include <ATen/core/Tensor.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/profile/gpu_activity.h"

namespace kiln::profile {
class CuptiTrace;
}

namespace kiln::runtime {

void sync_device(const at::Tensor& t);

struct OpSpan {
  std::string name;
  int64_t start_ns, end_ns;
};
class OpSpanRecorder {
 public:
  OpSpanRecorder(std::vector<OpSpan>& ops, std::chrono::steady_clock::time_point origin);
  ~OpSpanRecorder();
  OpSpanRecorder(const OpSpanRecorder&) = delete;
  OpSpanRecorder& operator=(const OpSpanRecorder&) = delete;

 private:
  uint64_t handle_;
};

#if KILN_WITH_CUDA
std::unique_ptr<profile::CuptiTrace> start_window_trace(std::chrono::steady_clock::time_point origin,
                                                       const std::function<bool()>& record_graphs_again,
                                                       const std::function<at::Tensor()>& fn, bool& graph_level);

struct KernelDetail {
  profile::GpuTrace trace;
  std::vector<double> times_ms;
  int64_t from_ns = -1;
};
KernelDetail kernel_detail(std::chrono::steady_clock::time_point origin, const std::function<bool()>& record_graphs_again,
                           const std::function<at::Tensor()>& fn, int iterations);
#endif

}  // namespace kiln::runtime
