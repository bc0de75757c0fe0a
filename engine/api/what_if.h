// What fixing a graph break would gain, for the GUI and the CLI: value types in, value types out.
// No LibTorch, no Qt. Throws kiln::Error with a message fit to show a user.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/commands/what_if.h"

namespace kiln::api {

using WhatIfResult = runtime::WhatIfResult;

// Each graph break removed where that is sound, checked against eager and measured over `rounds`
// passes (`only`: that break alone, as the breaks panel asks); see engine/commands/what_if.h.
inline WhatIfResult what_if(const std::string& model_path, const std::vector<std::vector<InputSpec>>& calls,
                            const capture::CompileOptions& options = {}, int rounds = 20,
                            const std::optional<capture::GraphBreak>& only = std::nullopt) {
  return runtime::measure_what_if(model_path, calls, options, rounds, only);
}
inline std::string what_if_text(const WhatIfResult& r) { return runtime::what_if_text(r); }
inline std::string what_if_site_text(const WhatIfResult& r, const runtime::WhatIfBreak& b) {
  return runtime::what_if_site_text(r, b);
}

}  // namespace kiln::api
