// The C++ target: kernels emitted as one translation unit, built by the host C++ compiler into a
// shared library (cached on disk by source hash) and loaded with dlopen; launch notes say OpenMP.
#pragma once

#include <memory>

#include "engine/pipeline/pipeline.h"

namespace kiln::backends {

std::unique_ptr<pipeline::Target> make_cpp_target();

}  // namespace kiln::backends
