// Example inputs the user describes on the command line: "8x64", "2x16x64:float64", "int64:4x8".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/ir/graph.h"

namespace kiln {

struct InputSpec {
  std::vector<int64_t> shape;
  ir::DType dtype = ir::DType::Float32;
  std::string str() const;  // "8x64" or "8x64:int64"
};

// Parses "8x64" (dtype from `default_dtype`) or "8x64:float16". A scalar tensor is "scalar".
// Throws kiln::Error naming the text on anything else (empty dims, zero or negative sizes,
// sizes whose product overflows or exceeds 2^40 elements, unknown dtypes).
InputSpec parse_input_spec(const std::string& text, ir::DType default_dtype = ir::DType::Float32);

}  // namespace kiln
