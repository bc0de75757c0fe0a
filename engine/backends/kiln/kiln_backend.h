// The kiln backend: lowering → fusion → C++ codegen → compile (cached) → run. With fuse=false it
// is the aot_eager check: the lowered graph run one primitive at a time.
#pragma once

#include "engine/runtime/backend.h"

namespace kiln::backends {

std::unique_ptr<runtime::Backend> make_kiln_backend(bool fuse);

}  // namespace kiln::backends
