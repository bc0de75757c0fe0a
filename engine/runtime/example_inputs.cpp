#include "engine/runtime/example_inputs.h"

#include <random>

#include <ATen/CPUGeneratorImpl.h>

#include "engine/capture/torch_meta.h"

namespace kiln::runtime {

std::vector<at::Tensor> make_inputs(const std::vector<InputSpec>& specs, uint64_t seed) {
  if (seed == 0) seed = (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  std::vector<at::Tensor> out;
  for (const auto& s : specs) {
    auto st = capture::to_scalar_type(s.dtype);
    at::Tensor t;
    if (at::isFloatingType(st)) {
      t = at::randn(s.shape, gen, at::TensorOptions().dtype(at::kFloat)).to(st);
    } else if (st == at::kBool) {
      t = at::randint(0, 2, s.shape, gen, at::TensorOptions().dtype(at::kLong)).to(at::kBool);
    } else {
      t = at::randint(0, 10, s.shape, gen, at::TensorOptions().dtype(st));
    }
    out.push_back(t);
  }
  return out;
}

}  // namespace kiln::runtime
