#include "engine/runtime/own_products.h"

#include <cstdlib>
#include <string>

#include "engine/base/error.h"

namespace kiln::runtime {

double own_product_max_flop() {
  // None by default: on the H100 the kernel's device time exceeded the host time it saves on every problem measured
  // (bench/product_probe.cpp; runtime/cuda/half_gemm.h).
  const char* v = std::getenv("KILN_OWN_PRODUCT_MAX_GFLOP");
  if (!v) return -1;
  char* end = nullptr;
  const double g = std::strtod(v, &end);
  if (end == v || *end != '\0' || !(g > 0))
    throw Error("KILN_OWN_PRODUCT_MAX_GFLOP='" + std::string(v) + "': a positive number of Gflop");
  return g * 1e9;
}

}  // namespace kiln::runtime
