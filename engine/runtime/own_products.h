// Default mode's bound on the 16-bit products Kiln computes with its own kernel (runtime/cuda/half_gemm.h).
//
// own_product_max_flop()
//   post: KILN_OWN_PRODUCT_MAX_GFLOP · 1e9 where that is set, -1 (no product: cuBLAS computes them all) otherwise.
//   throws: Error naming the variable and its value where it is set to anything but a positive number.
// Torch-free, so that the commands can refuse a bad value before they compile anything.
#pragma once

namespace kiln::runtime {

double own_product_max_flop();

}  // namespace kiln::runtime
