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

// A self-attention block without weights, written out as transformers write it: from x [B, T, heads·head_dim],
// q = sin(x), k = cos(x) and v = 2x + 1 each split into `heads` heads (view, transpose(1, 2)); `scores` is the
// Python expression of the scores from q, k and the mask input m (a variation per test); p its softmax over the
// last dim, o = p @ v, and the heads merged back to [B, T, heads·head_dim] unless `tail` (reading o and p)
// returns something else. Its attention chain is lowering/attention.h's.
inline std::string attention_block_model(const std::string& name, int heads, int head_dim, const std::string& scores,
                                         const std::string& tail = "") {
  const std::string split = "view(b, t, " + std::to_string(heads) + ", " + std::to_string(head_dim) + ").transpose(1, 2)\n";
  return scripted_model(name, "\ndef forward(self, x, m):\n    b = x.size(0)\n    t = x.size(1)\n"
                              "    q = torch.sin(x)." + split + "    k = torch.cos(x)." + split +
                              "    v = (x * 2.0 + 1.0)." + split + "    s = " + scores +
                              "\n    p = torch.softmax(s, -1)\n    o = torch.matmul(p, v)\n" +
                              (tail.empty() ? "    return o.transpose(1, 2).contiguous().view(b, t, " +
                                                  std::to_string(heads * head_dim) + ")\n"
                                            : tail));
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
