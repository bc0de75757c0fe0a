// Float32 precision on the GPU, as PyTorch sets it: torch.set_float32_matmul_precision for cuBLAS
// ("highest": float32 math, PyTorch's default; "high"/"medium": TF32 or bfloat16 tensor cores) and
// cuDNN convolutions, which PyTorch lets use TF32 by default. The tolerance compiled results are
// held to follows from it (runtime/compare_values.h: tolerance_for(..., tf32)).
#pragma once

#include <string>

#include "engine/model/model.h"

namespace kiln::runtime {

// Sets torch.set_float32_matmul_precision's value for this process; throws kiln::Error on a value
// other than highest, high or medium.
void set_float32_matmul_precision(const std::string& precision);
std::string float32_matmul_precision();  // the current value
bool cudnn_allows_tf32();                 // torch.backends.cudnn.allow_tf32
void set_cudnn_allows_tf32(bool allow);
// "float32 matmul precision highest; cuDNN convolutions may use TF32" (sessions, reports).
std::string float32_precision_text();

// Whether float32 results of the model on its device may go through TF32: a CUDA model with
// matmuls at precision high/medium, or with convolutions while cuDNN allows TF32.
bool tf32_in_effect(const model::Model& model);

// Runs f with TF32 off everywhere (highest matmul precision, cuDNN TF32 off), restoring after.
template <class F>
auto without_tf32(F&& f) {
  struct Restore {
    std::string matmul = float32_matmul_precision();
    bool cudnn = cudnn_allows_tf32();
    ~Restore() {
      set_float32_matmul_precision(matmul);
      set_cudnn_allows_tf32(cudnn);
    }
  } restore;
  set_float32_matmul_precision("highest");
  set_cudnn_allows_tf32(false);
  return f();
}

}  // namespace kiln::runtime
