#include "engine/runtime/tuning_progress.h"

#include <mutex>

namespace kiln::runtime {

namespace {
std::mutex listener_mutex;
TuningProgressFn listener;
}  // namespace

TuningProgressFn set_tuning_progress(TuningProgressFn fn) {
  std::lock_guard<std::mutex> lock(listener_mutex);
  std::swap(listener, fn);
  return fn;
}

void report_tuning(const std::string& kernel, int done, int total) {
  TuningProgressFn fn;
  {
    std::lock_guard<std::mutex> lock(listener_mutex);
    fn = listener;
  }
  if (fn) fn(kernel, done, total);
}

}  // namespace kiln::runtime
