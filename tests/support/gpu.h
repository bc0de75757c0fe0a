// Why the GPU tests cannot run here ("" when they can): no CUDA device for LibTorch, no driver for
// Kiln's own kernels, or a build without the CUDA toolkit.
#pragma once

#include "kiln_build_config.h"

#include <string>

#include "engine/model/model.h"
#if KILN_WITH_CUDA
#include "engine/runtime/cuda/cuda_driver.h"
#endif

namespace kiln::test {

inline std::string why_no_gpu() {
  std::string why = model::cuda_unavailable_reason();
#if KILN_WITH_CUDA
  if (why.empty() && !cuda::driver_available()) why = cuda::driver_unavailable_reason();
#else
  if (why.empty()) why = "Kiln was built without the CUDA toolkit";
#endif
  return why;
}

}  // namespace kiln::test
