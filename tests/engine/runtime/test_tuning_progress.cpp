// max-autotune's progress listener: reports reach the installed listener, a scope puts the
// previous one back, and reporting with nobody listening is harmless.
#include "engine/runtime/tuning_progress.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace kiln;

TEST(TuningProgress, ReportsReachTheListenerAndScopesRestoreThePreviousOne) {
  runtime::report_tuning("nobody", 1, 2);  // no listener: nothing happens
  std::vector<std::string> outer, inner;
  runtime::ScopedTuningProgress a([&](const std::string& k, int done, int total) {
    outer.push_back(k + " " + std::to_string(done) + "/" + std::to_string(total));
  });
  runtime::report_tuning("k0_relu", 3, 15);
  {
    runtime::ScopedTuningProgress b([&](const std::string& k, int done, int total) {
      inner.push_back(k + " " + std::to_string(done) + "/" + std::to_string(total));
    });
    runtime::report_tuning("gemm_linear", 5, 5);
  }
  runtime::report_tuning("k1_row_softmax", 0, 10);
  EXPECT_EQ(outer, (std::vector<std::string>{"k0_relu 3/15", "k1_row_softmax 0/10"}));
  EXPECT_EQ(inner, (std::vector<std::string>{"gemm_linear 5/5"}));
}
