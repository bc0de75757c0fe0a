// Progress of max-autotune, which times its candidates during a region's first call: every timed
// candidate (a launch configuration of a generated kernel, a GEMM tile or cuBLAS) is reported to
// one process-wide listener, so the CLI and the workbench can say what is being tuned.
#pragma once

#include <functional>
#include <string>

namespace kiln::runtime {

// kernel: what is being tuned ("k3_row_softmax", "gemm_linear"); done/total: its candidates.
using TuningProgressFn = std::function<void(const std::string& kernel, int done, int total)>;

// Installs `fn` (null: nobody listens) and returns the previous listener.
TuningProgressFn set_tuning_progress(TuningProgressFn fn);
void report_tuning(const std::string& kernel, int done, int total);

// Installs a listener for a scope and puts the previous one back.
class ScopedTuningProgress {
 public:
  explicit ScopedTuningProgress(TuningProgressFn fn) : previous_(set_tuning_progress(std::move(fn))) {}
  ~ScopedTuningProgress() { set_tuning_progress(std::move(previous_)); }
  ScopedTuningProgress(const ScopedTuningProgress&) = delete;
  ScopedTuningProgress& operator=(const ScopedTuningProgress&) = delete;

 private:
  TuningProgressFn previous_;
};

}  // namespace kiln::runtime
