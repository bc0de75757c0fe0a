// torch.compile's modes, declared once: what --mode takes, what kiln profile --modes runs beside its
// eager baseline, and what the workbench offers.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

namespace kiln::capture {

// In the order they are shown: default, reduce-overhead, max-autotune.
inline const std::vector<std::string>& compile_modes() {
  static const std::vector<std::string> modes = {"default", "reduce-overhead", "max-autotune"};
  return modes;
}

inline bool is_compile_mode(const std::string& mode) {
  const auto& modes = compile_modes();
  return std::find(modes.begin(), modes.end(), mode) != modes.end();
}

}  // namespace kiln::capture
