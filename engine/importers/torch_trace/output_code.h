// The kernels in Inductor's generated module (the inductor_output_code payload).
//
// kernels_from_output_code(code, compile_id, file_name)
//   post: the whole module first (name = file_name's base name, language "python"), then one
//         Kernel per `NAME = async_compile.KIND('NAME', '''SOURCE''', ...)` definition in order:
//         source = SOURCE, language from KIND ("triton", "cpp", "cuda", ...), nodes from the
//         "# Topologically Sorted Source Nodes: [...]" comment above it, launch_config from the first
//         `NAME.run(...)` call in the module. A definition cut short (truncated log) keeps the source
//         read so far.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "engine/session/session.h"

namespace kiln::importers {

std::vector<session::Kernel> kernels_from_output_code(std::string_view code, const std::string& compile_id,
                                                      const std::string& file_name);

}  // namespace kiln::importers
