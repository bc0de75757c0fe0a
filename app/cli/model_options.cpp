// The parts of the common options that reach the compiler: kiln-model only (kiln links no LibTorch).
#include "app/cli/common_options.h"

namespace kiln::cli {

void BackendArgs::apply(api::CompileOptions& o) const {
  api::check_mode(mode);
  api::check_product_bound();
  for (const auto& p : plugins) api::load_backend_plugin(p);
  o.backend = backend;
  o.mode = mode;
  o.dynamic = api::parse_dynamic(dynamic);
}

}  // namespace kiln::cli
