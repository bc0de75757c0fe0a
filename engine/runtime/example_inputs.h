// Random example inputs for a run: fresh values each call (never zeros), from InputSpecs.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/ir/input_spec.h"
#include "engine/model/torch_compat.h"

namespace kiln::runtime {

// seed 0 = a fresh nondeterministic seed. Floats ~ N(0, 1); integers uniform in [0, 10); bools fair coins.
std::vector<at::Tensor> make_inputs(const std::vector<InputSpec>& specs, uint64_t seed = 0);

// LibTorch's eager forward of `module` on `args`, its failures (wrong shapes or dtypes for the model)
// turned into one kiln::Error line: "<model>: forward on inputs [4x65] failed: <LibTorch's last line>".
c10::IValue eager_forward(torch::jit::Module& module, std::vector<c10::IValue> args, const std::string& model_path,
                          const std::vector<InputSpec>& specs);

// module.forward the way eager PyTorch runs it: op by op, with the TorchScript graph executor's
// optimizations (profiling, TensorExpr fusion of GPU pointwise chains) switched off for the call.
c10::IValue eager_call(torch::jit::Module& module, std::vector<c10::IValue> args);

}  // namespace kiln::runtime
