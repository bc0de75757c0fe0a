// Small models written as TorchScript source in the tests themselves, saved to a temp archive.
#pragma once

#include <string>
#include <utility>
#include <vector>

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

// ConvNeXt's stem and `blocks` of its blocks (two unless named) in miniature, 16 channels, random weights: conv 4x4
// stride 4, LayerNorm2d (permute(0, 2, 3, 1), layer_norm, permute(0, 3, 1, 2)); per block a depthwise 7x7 convolution,
// permute(0, 2, 3, 1), layer_norm, a product 16 -> 64, GELU, a product 64 -> 16, a per-channel scale, permute(0, 3, 1,
// 2), the residual add; then the mean over the map. Returns the archive's path.
inline std::string convnext_blocks_model(int blocks = 2) {
  const std::string name = blocks == 2 ? "convnext_blocks" : "convnext_blocks_" + std::to_string(blocks);
  torch::jit::Module m(name);
  m.register_parameter("stem", torch::randn({16, 3, 4, 4}) * 0.2, false);
  for (int b = 1; b <= blocks; ++b)
    m.register_parameter("dw" + std::to_string(b), torch::randn({16, 1, 7, 7}) * 0.2, false);
  m.register_parameter("up", torch::randn({16, 64}) * 0.2, false);
  m.register_parameter("down", torch::randn({64, 16}) * 0.2, false);
  m.register_parameter("gamma", torch::rand({16}) + 0.5, false);
  std::string calls;
  for (int b = 1; b <= blocks; ++b) calls += "    s = self.block(s, self.dw" + std::to_string(b) + ")\n";
  m.define(R"JIT(
def block(self, x, dw):
    y = torch.conv2d(x, dw, None, [1, 1], [3, 3], [1, 1], 16)
    y = y.permute(0, 2, 3, 1)
    y = torch.layer_norm(y, [16])
    y = torch.gelu(torch.matmul(y, self.up))
    y = torch.matmul(y, self.down) * self.gamma
    return x + y.permute(0, 3, 1, 2)

def forward(self, x):
    s = torch.conv2d(x, self.stem, None, [4, 4])
    s = torch.layer_norm(s.permute(0, 2, 3, 1), [16]).permute(0, 3, 1, 2)
)JIT" + calls + "    return s.mean([2, 3])\n");
  std::string path = temp_dir() + "/" + name + ".pt";
  m.save(path);
  return path;
}

// ConvNeXt's downsampling in miniature, random weights: a stem conv 2x2 stride 2 (3 -> 8), LayerNorm2d (permute(0, 2, 3,
// 1), layer_norm over the 8 channels, permute(0, 3, 1, 2)), then the downsampling conv 2x2 stride 2 (8 -> 16) with its
// bias, as torchvision's ConvNeXt stages begin. Returns the archive's path.
inline std::string convnext_downsample_model() {
  torch::jit::Module m("convnext_downsample");
  m.register_parameter("stem", torch::randn({8, 3, 2, 2}) * 0.3, false);
  m.register_parameter("ln_w", torch::rand({8}) + 0.5, false);
  m.register_parameter("ln_b", torch::randn({8}) * 0.1, false);
  m.register_parameter("down", torch::randn({16, 8, 2, 2}) * 0.3, false);
  m.register_parameter("down_b", torch::randn({16}) * 0.1, false);
  m.define(R"JIT(
def forward(self, x):
    s = torch.conv2d(x, self.stem, None, [2, 2])
    s = torch.layer_norm(s.permute(0, 2, 3, 1), [8], self.ln_w, self.ln_b, 1e-6).permute(0, 3, 1, 2)
    return torch.conv2d(s, self.down, self.down_b, [2, 2])
)JIT");
  std::string path = temp_dir() + "/convnext_downsample.pt";
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

// Every padding, stride and dilation case of max_pool2d after pointwise work (x * 2, exact, NaN kept): ResNet's 3x3
// stride 2 padding 1; 2x2 stride 2 (no padding: no tap carries a condition); 3x3 stride 1 padding 1 dilation [1, 2]
// (wider than it is tall); 5x5 stride 3 padding 2 (windows that cross both edges of a small map); a 9x9 window (81
// taps: stays a reduction). Returns the archive's path.
inline std::string pool_cases_model() {
  return scripted_model("pool_cases", R"JIT(
def forward(self, x):
    y = x * 2.0
    a = torch.max_pool2d(y, [3, 3], [2, 2], [1, 1], [1, 1], False)
    b = torch.max_pool2d(a, [2, 2], [2, 2], [0, 0], [1, 1], False)
    c = torch.max_pool2d(y, [3, 3], [1, 1], [1, 1], [1, 2], False)
    d = torch.max_pool2d(c, [5, 5], [3, 3], [2, 2], [1, 1], False)
    e = torch.max_pool2d(x, [9, 9], [1, 1], [4, 4], [1, 1], False)
    return torch.cat([b.flatten(1), d.flatten(1), e.flatten(1)], 1)
)JIT");
}

// A chain of six depthwise convolutions over 8 channels (random weights in `dtype`) covering every window, stride,
// padding and dilation case: 3x3 with a bias, then an affine and a sigmoid; 5x5 stride 2; 3x3 with stride [1, 2],
// padding [2, 1], dilation [2, 1]; 3x3 without padding; 7x7 padding 3 (more than is left of a small input) and a
// relu; 1x1 with a bias. Returns the archive's path.
inline std::string depthwise_cases_model(const std::string& name, at::ScalarType dtype = at::kFloat) {
  torch::jit::Module m(name);
  for (const auto& [p, sizes] : std::vector<std::pair<std::string, std::vector<int64_t>>>{
           {"w1", {8, 1, 1, 1}}, {"w3", {8, 1, 3, 3}}, {"w5", {8, 1, 5, 5}}, {"w7", {8, 1, 7, 7}}, {"b", {8}}})
    m.register_parameter(p, torch::randn(sizes).to(dtype), false);
  m.define(R"JIT(
def forward(self, x):
    y = torch.conv2d(x, self.w3, self.b, [1, 1], [1, 1], [1, 1], 8)
    y = torch.sigmoid(y * 0.5 + 1.0)
    y = torch.conv2d(y, self.w5, None, [2, 2], [2, 2], [1, 1], 8)
    y = torch.conv2d(y, self.w3, None, [1, 2], [2, 1], [2, 1], 8)
    y = torch.conv2d(y, self.w3, self.b, [1, 1], [0, 0], [1, 1], 8)
    y = torch.relu(torch.conv2d(y, self.w7, None, [1, 1], [3, 3], [1, 1], 8))
    return torch.conv2d(y, self.w1, self.b, [1, 1], [0, 0], [1, 1], 8)
)JIT");
  std::string path = temp_dir() + "/" + name + ".pt";
  m.save(path);
  return path;
}

}  // namespace kiln::test
