// Example inputs the user describes on the command line: "8x64", "2x16x64:float64", "int64:4x8".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/ir/graph.h"

namespace kiln {

// The --input help text every command shows.
inline constexpr const char* kInputSpecHelp =
    "Shape of one forward argument (repeat per argument): 8x64, 8x64:float16, or 8x128:int64[0,30522) for an "
    "integer input drawn from [0,30522) (default [0,10)); float inputs are drawn from N(0,1)";

struct InputSpec {
  std::vector<int64_t> shape;
  ir::DType dtype = ir::DType::Float32;
  // Integer and bool inputs: values are drawn uniformly from [low, high). Unset: [0, 10) for
  // integers (small enough to index any table), [0, 2) for bool.
  std::optional<int64_t> low, high;
  std::string str() const;  // "8x64", "8x64:int64" or "8x128:int64[0,30522)"
};

// Parses "8x64" (dtype from `default_dtype`), "8x64:float16" or, for integer dtypes, a value range
// "8x128:int64[0,30522)" (low inclusive, high exclusive). A scalar tensor is "scalar".
// Throws kiln::Error naming the text on anything else (empty dims, zero or negative sizes,
// sizes whose product overflows or exceeds 2^40 elements, unknown dtypes).
InputSpec parse_input_spec(const std::string& text, ir::DType default_dtype = ir::DType::Float32);

}  // namespace kiln
