// How Kiln runs a model for inference: under no-grad, or with KILN_INFERENCE_MODE=1 under LibTorch's
// InferenceMode (the dispatcher skips its autograd and view-tracking layers: fewer hops per LibTorch op, which a
// default-mode region pays on every extern call; results are then inference tensors: read them, copy them, or
// change them in place under this guard). The eager baselines Kiln measures run under the same guard, so a
// speedup never includes what the guard alone saves.
#pragma once

#include <c10/core/InferenceMode.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <cstdlib>
#include <optional>
#include <string>

namespace kiln::runtime {

inline bool inference_mode_wanted() {
  const char* v = std::getenv("KILN_INFERENCE_MODE");
  return v && std::string(v) == "1";
}

class InferenceGuard {
 public:
  InferenceGuard() {
    if (inference_mode_wanted()) inference_.emplace();
    else no_grad_.emplace();
  }

 private:
  std::optional<c10::InferenceMode> inference_;
  std::optional<torch::NoGradGuard> no_grad_;
};

}  // namespace kiln::runtime
