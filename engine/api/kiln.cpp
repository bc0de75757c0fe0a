#include "engine/api/kiln.h"

#include <cstdio>

#include "engine/backends/builtin.h"
#include "engine/model/model.h"
#include "engine/report/number_text.h"

namespace kiln::api {

std::string libtorch_version() { return model::libtorch_version(); }

InspectResult inspect(const std::string& model_path, const std::vector<InputSpec>& inputs, uint64_t seed) {
  auto m = model::load_model(model_path);
  return capture::inspect_model(m, inputs, seed);
}

ExplainResult explain(const std::string& model_path, const std::vector<std::vector<InputSpec>>& calls,
                      const CompileOptions& options) {
  auto m = model::load_model(model_path);
  return runtime::explain_model(m, calls, options);
}

CompileResult compile(const std::string& model_path, const std::vector<InputSpec>& inputs,
                      const CompileOptions& options, const std::string& dump_dir, int checks, const std::string& device) {
  auto m = model::load_model(model_path, device);
  return runtime::compile_model(m, inputs, options, dump_dir, checks);
}

CheckResult check(const std::string& model_path, const std::vector<InputSpec>& inputs, const CheckOptions& options) {
  auto m = model::load_model(model_path);
  return runtime::check_model(m, inputs, options);
}

std::vector<std::string> backend_names() {
  backends::register_builtin_backends();
  return runtime::backend_names();
}
void load_backend_plugin(const std::string& path) {
  backends::register_builtin_backends();  // a plugin may replace a built-in: it registers after them
  runtime::load_backend_plugin(path);
}

session::Session profile(const std::string& model_path, const std::vector<InputSpec>& inputs,
                         const ProfileOptions& options, const std::string& out_path,
                         const runtime::ProgressFn& progress) {
  auto m = model::load_model(model_path);
  return runtime::profile_model(m, inputs, options, out_path, progress);
}

session::Session open_session(const std::string& path) { return session::load_session(path); }

std::string runs_table(const session::Session& s) {
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "%-16s %-12s %10s %10s %10s %9s %9s %10s  %s\n", "mode", "backend", "median ms",
                "p10 ms", "p90 ms", "speedup", "kern/it", "max rel", "status");
  out += line;
  // A run that did not finish ok measured nothing: dashes, not zeros.
  for (const auto& r : s.runs) {
    const bool ok = r.status == "ok";
    std::snprintf(line, sizeof line, "%-16s %-12s %10s %10s %10s %9s %9s %10s  ", r.mode.c_str(), r.backend.c_str(),
                  report::measured(r.latency.median_ms, 4, ok).c_str(), report::measured(r.latency.p10_ms, 4, ok).c_str(),
                  report::measured(r.latency.p90_ms, 4, ok).c_str(), report::measured(r.speedup_vs_eager, 2, ok).c_str(),
                  report::measured(r.kernels_per_iter, 1, ok).c_str(), report::measured_error(r.max_rel_error, ok).c_str());
    out += line;
    out += r.status + "\n";  // whole: an error message is longer than any fixed buffer
  }
  return out;
}

}  // namespace kiln::api
