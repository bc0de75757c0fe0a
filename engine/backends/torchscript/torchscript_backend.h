// The torchscript peer: the model's frozen TorchScript module through LibTorch's
// optimize_for_inference (constant folding, conv-bn folding, operator fusion), compiled whole. A
// peer to measure Kiln's modes against, not a backend for captured regions (whole_model()).
#pragma once

#include <memory>

#include "engine/runtime/backend.h"

namespace kiln::backends {

std::unique_ptr<runtime::Backend> make_torchscript_backend();

}  // namespace kiln::backends
