// What a CUBIN says of its kernels, read from its ELF without a GPU or a disassembler: each function's registers
// per thread and its stack frame (the bytes of local memory a thread keeps: spilled registers, or a local array
// indexed at run time). A cached CUBIN answers as well as a fresh one, since ptxas wrote both into the image
// (its global .nv.info section: EIATTR_REGCOUNT and EIATTR_FRAME_SIZE records by symbol).
//
// cubin_resources(cubin)
//   post: one entry per kernel (a function with a .nv.info.<name> section: not the compiler's subroutines, such as
//         64-bit division) the image's .nv.info section has records of, in the order of the symbol table;
//         registers and stack_bytes filled (spill and shared fields stay 0: the image records neither as ptxas
//         reports them). Bytes that are not a 64-bit little-endian ELF, or sections, symbols or records that
//         point outside the image, give what was read before them: never a read out of bounds, never a throw.
#pragma once

#include <string>
#include <vector>

#include "engine/codegen/cuda/nvrtc_compiler.h"  // KernelResources

namespace kiln::codegen {

std::vector<KernelResources> cubin_resources(const std::string& cubin);

}  // namespace kiln::codegen
