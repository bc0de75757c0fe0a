// kiln profile's traced window on a GPU; see profile_window.h.
#include "engine/commands/profile_window.h"
#include "kiln_build_config.h"

#if KILN_TORCH_CUDA
#include <c10/cuda/CUDAFunctions.h>
#endif

#include <ATen/record_function.h>

#include <cstdlib>
#include <string>

#include "engine/base/error.h"
#include "engine/profile/gpu_timeline.h"
#include "engine/profile/host_trace.h"
#include "engine/runtime/memory_tracker.h"
#if KILN_WITH_CUDA
#include "engine/profile/cuda/cupti_trace.h"
#include "engine/runtime/cuda/cuda_graph_fn.h"
#endif

namespace kiln::runtime {

void sync_device(const at::Tensor& t) {
#if KILN_TORCH_CUDA
  if (t.is_cuda()) c10::cuda::device_synchronize();
#else
  (void)t;
#endif
}

namespace {
thread_local std::vector<OpSpan>* t_ops = nullptr;
thread_local std::chrono::steady_clock::time_point t_ops_origin;

int64_t ops_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t_ops_origin).count();
}

std::unique_ptr<at::ObserverContext> op_start(const at::RecordFunction& fn) {
  push_memory_owner(fn.name());  // eager's allocations belong to their top-level op
  if (t_ops) t_ops->push_back({fn.name(), ops_now_ns(), -1});
  return nullptr;
}

void op_end(const at::RecordFunction& fn, at::ObserverContext*) {
  pop_memory_owner();
  if (!t_ops) return;
  for (auto it = t_ops->rbegin(); it != t_ops->rend(); ++it)
    if (it->end_ns < 0 && it->name == fn.name()) {
      it->end_ns = ops_now_ns();
      break;
    }
}
}  // namespace

OpSpanRecorder::OpSpanRecorder(std::vector<OpSpan>& ops, std::chrono::steady_clock::time_point origin) {
  t_ops = &ops;
  t_ops_origin = origin;
  handle_ = at::addThreadLocalCallback(at::RecordFunctionCallback(op_start, op_end).scopes({at::RecordScope::FUNCTION}));
}

OpSpanRecorder::~OpSpanRecorder() {
  at::removeCallback(handle_);
  t_ops = nullptr;
}

#if KILN_WITH_CUDA
namespace {

// One call of fn outside the traced window (its spans go to a trace of their own): after
// record_graphs_again, the call that records the graphs.
void call_aside(const std::function<at::Tensor()>& fn) {
  profile::HostTrace scratch;
  sync_device(fn());
}

}  // namespace

std::unique_ptr<profile::CuptiTrace> start_window_trace(std::chrono::steady_clock::time_point origin,
                                                       const std::function<bool()>& record_graphs_again,
                                                       const std::function<at::Tensor()>& fn, bool& graph_level) {
  auto options = profile::default_cupti_options();
  const char* graphs = std::getenv("KILN_CUPTI_GRAPHS");
  const bool dropped = record_graphs_again && !(graphs && std::string(graphs) == "nodes") && record_graphs_again();
  // No graphs after all, or some left alive (a callable that did not drop its own): kernels are recorded
  // as in the other modes, the dropped graphs recorded again before the trace.
  graph_level = dropped && live_cuda_graphs() == 0;
  if (!graph_level && dropped) call_aside(fn);
  auto o = options;
  o.graph_level = graph_level;
  auto trace = std::make_unique<profile::CuptiTrace>(origin, o);
  // One call under the trace before the window (its records are the caller's to drop): it records the
  // graphs again, and pays CUPTI's first launch of each kernel under a trace (H200: 1.3-2.4 ms more
  // than the next call, which made every per-kernel window's first iteration 5x the others).
  call_aside(fn);
  return trace;
}

KernelDetail kernel_detail(std::chrono::steady_clock::time_point origin, const std::function<bool()>& record_graphs_again,
                           const std::function<at::Tensor()>& fn, int iterations) {
  KernelDetail d;
  record_graphs_again();
  call_aside(fn);
  std::unique_ptr<profile::CuptiTrace> cupti;
  try {
    cupti = std::make_unique<profile::CuptiTrace>(origin);
  } catch (const Error& e) {
    d.trace.error = e.what();
    return d;
  }
  call_aside(fn);  // CUPTI's first launch of each kernel under this trace: not one of the iterations
  auto* host = profile::HostTrace::active();
  d.from_ns = host ? host->now_ns() : 0;
  for (int i = 0; i < iterations; ++i) {
    auto s = std::chrono::steady_clock::now();
    at::Tensor out;
    {
      profile::Span it("detail", "kernel detail " + std::to_string(i));
      out = fn();
    }
    sync_device(out);
    d.times_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - s).count());
  }
  d.trace = cupti->stop();
  profile::keep_records_between(d.trace.records, d.from_ns);
  return d;
}
#endif

}  // namespace kiln::runtime
