#include "engine/api/kiln.h"

#include "engine/model/model.h"

#ifndef KILN_VERSION
#define KILN_VERSION "0.0.0"
#endif

namespace kiln::api {

std::string version() { return KILN_VERSION; }
std::string libtorch_version() { return model::libtorch_version(); }

InspectResult inspect(const std::string& model_path, const std::vector<InputSpec>& inputs, uint64_t seed) {
  auto m = model::load_model(model_path);
  return capture::inspect_model(m, inputs, seed);
}

ExplainResult explain(const std::string& model_path, const std::vector<std::vector<InputSpec>>& calls,
                      const CaptureOptions& options) {
  auto m = model::load_model(model_path);
  return runtime::explain_model(m, calls, options);
}

}  // namespace kiln::api
