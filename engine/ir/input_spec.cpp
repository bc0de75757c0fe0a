#include "engine/ir/input_spec.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <unistd.h>

#include "engine/base/error.h"

namespace kiln {

namespace {

// Physical memory of this machine in bytes (0 when unknown).
uint64_t physical_memory_bytes() {
  long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : 0;
}

std::string gib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", bytes / double(uint64_t(1) << 30));
  return buf;
}

}  // namespace

std::string InputSpec::str() const {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "x" : "") + std::to_string(shape[i]);
  if (shape.empty()) s = "scalar";
  if (dtype != ir::DType::Float32 || low) s += std::string(":") + ir::dtype_name(dtype);
  if (low && high) s += "[" + std::to_string(*low) + "," + std::to_string(*high) + ")";
  return s;
}

InputSpec parse_input_spec(const std::string& text, ir::DType default_dtype) {
  InputSpec spec;
  spec.dtype = default_dtype;
  std::string dims = text;
  std::string body = text;
  // A value range "[low,high)" after the dtype.
  auto bracket = text.find('[');
  if (bracket != std::string::npos) {
    std::string range = text.substr(bracket);
    body = text.substr(0, bracket);
    long long lo = 0, hi = 0;
    char close = 0;
    int used = 0;
    if (std::sscanf(range.c_str(), "[%lld,%lld%c%n", &lo, &hi, &close, &used) != 3 || close != ')' ||
        static_cast<size_t>(used) != range.size())
      throw Error("input '" + text + "': value range '" + range + "' is not [low,high) (e.g. 8x128:int64[0,30522))");
    if (hi <= lo) throw Error("input '" + text + "': value range '" + range + "' is empty (high must exceed low)");
    spec.low = lo;
    spec.high = hi;
  }
  dims = body;
  auto colon = body.find(':');
  if (colon != std::string::npos) {
    std::string a = body.substr(0, colon), b = body.substr(colon + 1);
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
  if (spec.low && (spec.dtype == ir::DType::Float32 || spec.dtype == ir::DType::Float64 ||
                   spec.dtype == ir::DType::Float16 || spec.dtype == ir::DType::BFloat16))
    throw Error("input '" + text + "': a value range applies to integer and bool inputs only (float inputs are drawn from N(0,1))");
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
  // Refuse before allocating: one input may take at most a quarter of this machine's memory (the
  // model's activations, the reference run and the compiled run need the rest).
  uint64_t bytes = uint64_t(numel) * uint64_t(std::max(1, ir::dtype_size(spec.dtype)));
  uint64_t memory = physical_memory_bytes();
  if (memory > 0 && bytes > memory / 4)
    throw Error("input '" + text + "': needs " + gib(double(bytes)) + ", more than a quarter of this machine's " +
                gib(double(memory)) + " of memory");
  return spec;
}

}  // namespace kiln
