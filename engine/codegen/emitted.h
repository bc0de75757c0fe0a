// What both emitters (C++ and CUDA) share: the notes that say where each graph node came from,
// the escaping of model text into comments, and where each kernel sits in the emitted source.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "engine/ir/graph.h"

namespace kiln::codegen {

struct NodeNote {
  std::string name;    // IR node name
  std::string target;  // aten op
  std::string where;   // "sample_models.py:41 in l1"
};

// The note of every call node of a graph: op and "file:line in module" (the provenance comments).
std::vector<NodeNote> node_notes(const ir::Graph& graph);

// Makes arbitrary text safe inside a // comment: printable ASCII only, no trailing backslash, no
// trigraph ("??/" would be a backslash to compilers that read trigraphs).
std::string cpp_comment(const std::string& text);

// One comment line per graph node a kernel fuses: "//   name = target  (where)", every model string
// through cpp_comment().
std::string node_comment_lines(const std::vector<std::string>& nodes, const std::vector<NodeNote>& notes);

// A kernel's function in the emitted source: [begin, end) covers its comment block and its
// body through the closing brace (autotuning variants, CUDA only, are not part of it).
struct KernelSpan {
  std::string name;
  size_t begin = 0, end = 0;
};

// The text of `name`'s span; "" when there is none or it does not fit the source.
std::string kernel_text(const std::string& source, const std::vector<KernelSpan>& spans, const std::string& name);

}  // namespace kiln::codegen
