// Small models written as TorchScript source in the tests themselves, saved to a temp archive.
#pragma once

#include <string>

#include <torch/script.h>

#include "tests/support/paths.h"

namespace kiln::test {

// A model defined in TorchScript source (`def forward(self, x): ...`) and saved to a temp archive.
inline std::string scripted_model(const std::string& name, const std::string& source) {
  torch::jit::Module m(name);
  m.define(source);
  std::string path = temp_dir() + "/" + name + ".pt";
  m.save(path);
  return path;
}

// ResNet's stem in miniature: conv(3→8) → relu → max_pool2d(3, stride 2, padding 1) → conv(8→8),
// random weights. Returns the archive's path.
inline std::string stem_model() {
  torch::jit::Module m("Stem");
  m.register_parameter("w1", torch::randn({8, 3, 3, 3}), false);
  m.register_parameter("w2", torch::randn({8, 8, 3, 3}), false);
  m.define(R"JIT(
def forward(self, x):
    y = torch.relu(torch.conv2d(x, self.w1, None, [1, 1], [1, 1]))
    y = torch.max_pool2d(y, [3, 3], [2, 2], [1, 1], [1, 1], False)
    return torch.conv2d(y, self.w2, None, [1, 1], [1, 1])
)JIT");
  std::string path = temp_dir() + "/stem.pt";
  m.save(path);
  return path;
}

}  // namespace kiln::test
