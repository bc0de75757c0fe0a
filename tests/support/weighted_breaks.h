// A model with three graph breaks of very different weight, as TorchScript source: a print (next to
// nothing runs between its regions), a scalar read (one reduction and item()), and a loop whose trip
// condition reads tensor data (200 rounds of eager ops in the interpreter).
#pragma once

#include <string>

#include "tests/support/scripted_models.h"

namespace kiln::test {

inline std::string weighted_breaks_model() {
  return scripted_model("weighted_breaks", R"JIT(
def forward(self, x):
    y = torch.relu(x) * 2.0
    print("light")
    y = y + 1.0
    s = float(y.mean().item())
    y = y * s
    i = 0
    while bool(y.abs().sum() > 0.0) and i < 200:
        y = torch.tanh(y) + 0.5
        i += 1
    return torch.sigmoid(y) * 3.0
)JIT");
}

}  // namespace kiln::test
