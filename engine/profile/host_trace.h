// Host tracing: spans recorded on the calling thread while a HostTrace is active on it. With no
// active trace a Span costs one thread-local load. Spans nest; each knows its lane (thread).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/records/records.h"

namespace kiln::profile {

struct HostSpan {
  std::string name;
  std::string category;    // "region", "kernel", "extern", "guard", "interpreter", "capture", "compile", "iteration"
  std::string compile_id;
  std::string kernel;
  int64_t start_ns = 0;    // since the trace began
  int64_t dur_ns = 0;
  int depth = 0;
  int thread = 0;
};

class HostTrace {
 public:
  HostTrace();   // becomes the active trace of this thread
  ~HostTrace();  // restores the previous one
  HostTrace(const HostTrace&) = delete;
  HostTrace& operator=(const HostTrace&) = delete;

  const std::vector<HostSpan>& spans() const { return spans_; }
  int64_t now_ns() const;
  static HostTrace* active();
  // While on (and Kiln has the CUDA toolkit), every Span is also an NVTX range, so CUPTI and
  // Nsight Systems see Kiln's regions, guard checks and fallbacks beside the GPU work.
  static void set_nvtx(bool on);

 private:
  friend class Span;
  std::chrono::steady_clock::time_point start_;
  std::vector<HostSpan> spans_;
  HostTrace* previous_ = nullptr;
  int depth_ = 0;
};

// A recorded span as a timeline event on its thread's lane ("host:<thread>"), of run `run`.
records::TimelineEvent timeline_event(const HostSpan& s, int run = -1);

class Span {
 public:
  // The texts are copied only while a trace is active: a name worth building per call is built only when
  // HostTrace::active() says it will be kept.
  Span(const char* category, const std::string& name, const std::string& compile_id = std::string(),
       const std::string& kernel = std::string());
  ~Span();
  Span(const Span&) = delete;
  // Names what the span turned out to run (a region span: the cache entry its guards chose), so device
  // work launched inside it, a CUDA graph's replay included, is attributed to that entry.
  void set_compile_id(const std::string& compile_id);
  Span& operator=(const Span&) = delete;

 private:
  HostTrace* trace_;
  size_t index_ = 0;
  bool nvtx_ = false;
};

}  // namespace kiln::profile
