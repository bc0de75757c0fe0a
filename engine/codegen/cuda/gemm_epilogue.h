// Epilogue fusion for the GEMM template: the pointwise kernel right after a `linear` extern (its
// tail: bias → activation, residual add, ...) as code the template runs on each element of C.
//
// gemm_epilogue(program, gemm, tail, prelude)
//   pre:  `gemm` is an extern computation of `program` and `tail` the kernel of the step after it.
//   post: the epilogue (code over gr, gc, v and the region's KilnArgs `args`) when the tail can run
//         there: a pointwise kernel over exactly the GEMM's output shape, row-major, reading the
//         GEMM's output only at its own element (that read becomes `v`); nullopt otherwise. The
//         tail's other reads and its stores index the region's buffers as the kernel would. A pure
//         function (tested on source text; the GPU tests run it).
#pragma once

#include <optional>
#include <string>

#include "engine/codegen/cuda/gemm_template.h"
#include "engine/fusion/schedule.h"

namespace kiln::codegen {

std::optional<GemmEpilogue> gemm_epilogue(const fusion::FusedProgram& p, int gemm, const fusion::FusedKernel& tail,
                                          const std::string& prelude);

}  // namespace kiln::codegen
