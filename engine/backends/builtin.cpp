#include "engine/backends/builtin.h"

#include <mutex>

#include "engine/backends/eager/eager_backend.h"
#include "engine/backends/kiln/kiln_backend.h"
#include "engine/backends/torchscript/torchscript_backend.h"

namespace kiln::backends {

void register_builtin_backends() {
  static std::once_flag once;
  std::call_once(once, [] {
    runtime::register_backend("eager", [] { return make_eager_backend(); });
    runtime::register_backend("aot_eager", [] { return make_kiln_backend(/*fuse=*/false); });
    runtime::register_backend("kiln", [] { return make_kiln_backend(/*fuse=*/true); });
    runtime::register_backend("cudagraphs", [] { return make_cudagraphs_backend(); });
    runtime::register_backend("torchscript", [] { return make_torchscript_backend(); });
  });
}

}  // namespace kiln::backends
