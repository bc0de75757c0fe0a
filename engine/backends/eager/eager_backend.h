// The eager backend (the captured region's ops one by one through LibTorch) and cudagraphs (the
// same ops captured into a CUDA graph and replayed: a peer for reduce-overhead without codegen).
#pragma once

#include <memory>

#include "engine/runtime/backend.h"

namespace kiln::backends {

std::unique_ptr<runtime::Backend> make_eager_backend();
std::unique_ptr<runtime::Backend> make_cudagraphs_backend();

}  // namespace kiln::backends
