// Pieces of IR graphs built by hand in tests (graphs a program file could hold, whatever they say).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "engine/ir/graph.h"

namespace kiln::test {

// A tensor's metadata: concrete sizes and a dtype.
inline ir::ValueMeta tensor_meta(std::initializer_list<int64_t> shape, ir::DType dtype = ir::DType::Float32) {
  ir::ValueMeta m;
  m.kind = ir::ValueMeta::Kind::Tensor;
  m.dtype = dtype;
  for (int64_t d : shape) m.shape.push_back(ir::Dim::concrete(d));
  return m;
}

// A literal list of integers.
inline ir::Arg int_list(std::initializer_list<int64_t> values) {
  std::vector<ir::Arg> items;
  for (int64_t v : values) items.push_back(ir::Arg::integer(v));
  return ir::Arg::list(items);
}

// The graph's output node returning `value`.
inline ir::Node output_node(const std::string& value) {
  ir::Node out;
  out.op = ir::NodeOp::Output;
  out.args = {ir::Arg::value(value)};
  return out;
}

}  // namespace kiln::test
