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

#include "engine/codegen/emitted.h"
#include "engine/fusion/schedule.h"

namespace kiln::codegen {

// spans (optional): where each kernel's function sits in the returned source.
std::string emit_cpp(const fusion::FusedProgram& p, const std::vector<NodeNote>& notes = {},
                     std::vector<KernelSpan>* spans = nullptr);

}  // namespace kiln::codegen
