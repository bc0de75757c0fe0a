// C++ code generation: one function per fused kernel, contiguous inner loops the compiler can
// vectorize, OpenMP over the outermost loop, sizes as arguments when dynamic. A pure function:
// the same program gives the same text (golden-tested).
//
// Each kernel is `extern "C" void <name>(void* const* buf, const double* scalar, const int64_t* sym)`:
// buf[c] is computation c's buffer (contiguous), scalar[k] the region's scalar inputs, sym[k] the
// value of size symbol program.symbols[k]. Comments name the graph nodes each kernel and statement
// comes from; model strings in comments pass through cpp_comment() and cannot end the comment or
// the line.
#pragma once

#include <string>
#include <vector>

#include "engine/fusion/schedule.h"

namespace kiln::codegen {

struct NodeNote {
  std::string name;    // IR node name
  std::string target;  // aten op
  std::string where;   // "sample_models.py:41 in l1"
};

std::string emit_cpp(const fusion::FusedProgram& p, const std::vector<NodeNote>& notes = {});

// Makes arbitrary text safe inside a // comment: printable ASCII only, no trailing backslash, no
// trigraph ("??/" would be a backslash to compilers that read trigraphs).
std::string cpp_comment(const std::string& text);

}  // namespace kiln::codegen
