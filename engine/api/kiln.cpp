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

CompileResult compile(const std::string& model_path, const std::vector<InputSpec>& inputs,
                      const CaptureOptions& options, const std::string& dump_dir, int checks) {
  auto m = model::load_model(model_path);
  return runtime::compile_model(m, inputs, options, dump_dir, checks);
}

std::vector<std::string> backend_names() { return runtime::backend_names(); }
void load_backend_plugin(const std::string& path) { runtime::load_backend_plugin(path); }

}  // namespace kiln::api
