#include "engine/base/input_spec.h"

#include <algorithm>
#include <cctype>

#include "engine/base/error.h"

namespace kiln {

std::string InputSpec::str() const {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "x" : "") + std::to_string(shape[i]);
  if (shape.empty()) s = "scalar";
  if (dtype != ir::DType::Float32) s += std::string(":") + ir::dtype_name(dtype);
  return s;
}

InputSpec parse_input_spec(const std::string& text, ir::DType default_dtype) {
  InputSpec spec;
  spec.dtype = default_dtype;
  std::string dims = text;
  auto colon = text.find(':');
  if (colon != std::string::npos) {
    std::string a = text.substr(0, colon), b = text.substr(colon + 1);
    // Accept both "8x64:int64" and "int64:8x64".
    auto dt = ir::parse_dtype(b);
    if (dt) {
      dims = a;
    } else if ((dt = ir::parse_dtype(a))) {
      dims = b;
    } else {
      throw Error("input '" + text + "': unknown dtype (use float32, float64, float16, bfloat16, int64, int32, bool)");
    }
    spec.dtype = *dt;
  }
  if (dims == "scalar") return spec;
  if (dims.empty()) throw Error("input '" + text + "': empty shape (write sizes like 8x64)");
  const int64_t limit = int64_t(1) << 40;
  int64_t numel = 1;
  size_t start = 0;
  while (true) {
    size_t x = dims.find_first_of("x,", start);
    std::string part = dims.substr(start, x == std::string::npos ? std::string::npos : x - start);
    if (part.empty() || part.size() > 12 ||
        !std::all_of(part.begin(), part.end(), [](unsigned char c) { return std::isdigit(c); }))
      throw Error("input '" + text + "': '" + part + "' is not a size (write sizes like 8x64)");
    int64_t v = std::stoll(part);
    if (v <= 0) throw Error("input '" + text + "': sizes must be positive, got " + part);
    if (numel > limit / v) throw Error("input '" + text + "': more than 2^40 elements");
    numel *= v;
    spec.shape.push_back(v);
    if (x == std::string::npos) break;
    start = x + 1;
  }
  return spec;
}

}  // namespace kiln
