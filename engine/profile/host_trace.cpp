#include "engine/profile/host_trace.h"
#include "kiln_build_config.h"

#include <atomic>
#include <functional>
#include <thread>

#if KILN_WITH_CUDA
#include <nvtx3/nvToolsExt.h>
#endif

namespace kiln::profile {

namespace {
thread_local HostTrace* t_active = nullptr;
std::atomic<bool> g_nvtx{false};
int thread_number() {
  static thread_local int n = static_cast<int>(std::hash<std::thread::id>{}(std::this_thread::get_id()) % 100000);
  return n;
}
}  // namespace

HostTrace::HostTrace() : start_(std::chrono::steady_clock::now()), previous_(t_active) { t_active = this; }
HostTrace::~HostTrace() { t_active = previous_; }

int64_t HostTrace::now_ns() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start_).count();
}

HostTrace* HostTrace::active() { return t_active; }

void HostTrace::set_nvtx(bool on) { g_nvtx = on; }

Span::Span(const char* category, const std::string& name, const std::string& compile_id, const std::string& kernel)
    : trace_(t_active) {
  if (!trace_) return;
  HostSpan s;
  s.name = name;
  s.category = category;
  s.compile_id = compile_id;
  s.kernel = kernel;
  s.depth = trace_->depth_++;
  s.thread = thread_number();
  s.start_ns = trace_->now_ns();
  index_ = trace_->spans_.size();
  trace_->spans_.push_back(std::move(s));
#if KILN_WITH_CUDA
  if (g_nvtx.load(std::memory_order_relaxed)) {
    const auto& pushed = trace_->spans_.back();
    nvtxRangePushA((pushed.category + ": " + pushed.name).c_str());
    nvtx_ = true;
  }
#endif
}

Span::~Span() {
  if (!trace_) return;
  auto& s = trace_->spans_[index_];
  s.dur_ns = trace_->now_ns() - s.start_ns;
  --trace_->depth_;
#if KILN_WITH_CUDA
  if (nvtx_) nvtxRangePop();
#endif
}

void Span::set_compile_id(const std::string& compile_id) {
  if (trace_) trace_->spans_[index_].compile_id = compile_id;
}

records::TimelineEvent timeline_event(const HostSpan& s, int run) {
  records::TimelineEvent e;
  e.run = run;
  e.lane = "host:" + std::to_string(s.thread);
  e.name = s.name;
  e.category = s.category;
  e.start_ns = s.start_ns;
  e.dur_ns = s.dur_ns;
  e.compile_id = s.compile_id;
  e.kernel = s.kernel;
  return e;
}

}  // namespace kiln::profile
