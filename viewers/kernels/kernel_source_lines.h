// Which lines of a generated kernel's source name which graph node, read from the comments the
// emitters write (engine/codegen/cpp/emit_cpp.cpp, cuda/emit_cuda.cpp):
//   header   "//   q_1 = aten::transpose  (sample_models.py:67:13)"   → q_1
//   store    "b19[...] = ...;  // q_1"                                 → q_1
//   buffer   "float* __restrict__ b13 = ...;  // layer_norm"           → layer_norm
//   reduce   "double acc11 = 0.0;  // sum for layer_norm_sum"          → layer_norm_sum
// and in Python/Triton sources (Inductor) "# Source Nodes: [linear, y], Original ATen: [...]".
//
// nodes_named_on_line(line): the node names a source line's comment names (empty when none).
// lines_naming_node(source, node): 1-based numbers of the lines whose comment names `node`.
#pragma once

#include <string>
#include <vector>

namespace kiln::viewers {

std::vector<std::string> nodes_named_on_line(const std::string& line);
std::vector<int> lines_naming_node(const std::string& source, const std::string& node);

}  // namespace kiln::viewers
