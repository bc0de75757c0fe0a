// The backends every Kiln has: eager, aot_eager, kiln, cudagraphs and the torchscript peer.
// register_builtin_backends()
//   post: they are in the backend registry (runtime/backend.h); calling again does nothing.
//   The commands (engine/commands) call it before they look a backend up by name; plugins
//   (load_backend_plugin) add theirs beside them.
#pragma once

namespace kiln::backends {

void register_builtin_backends();

}  // namespace kiln::backends
