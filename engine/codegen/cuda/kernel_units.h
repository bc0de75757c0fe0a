// The translation units a region's CUDA source compiles as, and which of them are the same code.
//
// A model's repeated blocks (ConvNeXt's stages, BERT's layers) give kernels that differ only in their names: the
// functions' names, the argument block's, the region buffers' and locals' numbers, the comments. Each is still its
// own function (CUPTI's records and CUDA-graph replays name a kernel by its function, so a kernel keeps its name),
// but units of one group compile the front end once: the others take the first one's PTX with the functions
// renamed and only run the assembler (nvrtc_compiler.h).
//
// canonical_kernel(text, functions, args_struct, reserved)
//   pre:  text is one kernel's span of the source (its functions, variants included); functions are its function
//         names in variants' order; args_struct its argument block's name; reserved the identifiers that keep
//         their names (canonical_reserved: the prelude's identifiers).
//   post: a text equal for two kernels only when one is the other with comments left out, blank runs made one
//         space or one line break, and identifiers renamed one to one: the functions to kiln_fn0, kiln_fn1, ... (in the order given), the argument block to
//         KilnArgs_kiln_fn, and every identifier of letters then digits (b12, acc7, rv0, t31) renumbered per
//         prefix in order of first appearance; an identifier keeps its name when it is reserved, called (followed
//         by "("), a member (after "." or "->" or "::") or a CUDA vector type (float4, int2), and no renamed one
//         takes such a name. nullopt when a function's name is still in the text afterwards (a kernel it cannot
//         vouch for: it stays a unit of its own).
// canonical_reserved(prelude): the identifiers of the shared prelude.
// kernel_units(source, info)
//   post: units as cuda_units(source, info) gives them; groups.group[u] equal for units of the same code (a
//         unit's own index for the first of its group); groups.functions[u] the unit's function names in
//         variants' order. The source whole (one unit) is a group of its own.
//
// An assembled unit's line table (-lineinfo, for tools that map instructions to source lines) is its group's first
// unit's: the same lines but where their comments differ in length (a kernel's header lists the graph nodes it fuses).
//
// KILN_SHARED_UNITS=0 gives every unit a group of its own (each compiled whole, as before sharing).
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "engine/codegen/cuda/emit_cuda.h"
#include "engine/codegen/cuda/nvrtc_compiler.h"

namespace kiln::codegen {

std::set<std::string> canonical_reserved(const std::string& prelude);

std::optional<std::string> canonical_kernel(const std::string& text, const std::vector<std::string>& functions,
                                            const std::string& args_struct, const std::set<std::string>& reserved);

struct KernelUnits {
  std::vector<std::string> sources;
  UnitGroups groups;
};

KernelUnits kernel_units(const std::string& source, const std::vector<CudaKernelInfo>& info);

}  // namespace kiln::codegen
