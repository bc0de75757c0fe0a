// The one header the GUI and the CLI include: value types in, value types out.
// No LibTorch, no Qt. Every function throws kiln::Error with a message fit to show a user.
#pragma once

#include <string>
#include <vector>

#include "engine/base/build_info.h"
#include "engine/base/error.h"
#include "engine/commands/check_model.h"
#include "engine/commands/compile_model.h"
#include "engine/commands/diff.h"
#include "engine/commands/explain.h"
#include "engine/commands/explain_session.h"
#include "engine/commands/inspect_model.h"
#include "engine/commands/profile_model.h"
#include "engine/runtime/float_precision.h"
#include "engine/ir/graph.h"
#include "engine/ir/input_spec.h"
#include "engine/ir/print_text.h"
#include "engine/ir/to_dot.h"
#include "engine/ir/to_json.h"
#include "engine/session/session.h"
#include "engine/session/store.h"

namespace kiln::api {

// Inline: the `kiln` binary, which links no LibTorch, prints them too.
inline std::string version() { return build_version(); }  // Kiln's version, "0.1.0"
inline std::string version_description() { return build_description(); }  // "0.1.0 (git 4b6787f1a2b3)"
std::string libtorch_version();   // the LibTorch Kiln runs on, "1.13.0"

using InspectResult = capture::InspectResult;

// Loads the archive and runs forward once on random inputs of the given shapes.
InspectResult inspect(const std::string& model_path, const std::vector<InputSpec>& inputs, uint64_t seed = 0);

using CompileOptions = capture::CompileOptions;
using ExplainResult = runtime::ExplainResult;

// Runs forward once per entry of `calls` through capture and the eager backend; compares every
// output with LibTorch's own module.forward.
ExplainResult explain(const std::string& model_path, const std::vector<std::vector<InputSpec>>& calls,
                      const CompileOptions& options = {});
inline std::string explain_text(const ExplainResult& r, bool timings = true) { return runtime::explain_text(r, timings); }
inline std::string explain_json(const ExplainResult& r) { return runtime::explain_json(r); }
// kiln explain -o: the explained calls as a session file, with what breaks and recompiles cost when
// measured (commands/explain_session.h).
inline void write_explain_session(const std::string& path, const std::string& model_path,
                                  const std::vector<std::vector<InputSpec>>& calls, const CompileOptions& options,
                                  const ExplainResult& r, const runtime::ExplainCosts* costs) {
  runtime::write_explain_session(path, model_path, calls, options, r, costs);
}

using CompileResult = runtime::CompileResult;
CompileResult compile(const std::string& model_path, const std::vector<InputSpec>& inputs,
                      const CompileOptions& options, const std::string& dump_dir = "", int checks = 3,
                      const std::string& device = "cpu");
inline std::string compile_text(const CompileResult& r) { return runtime::compile_text(r); }
inline std::string compile_json(const CompileResult& r) { return runtime::compile_json(r); }
std::vector<std::string> backend_names();

using CheckOptions = runtime::CheckOptions;
using CheckResult = runtime::CheckResult;
// The accuracy bisector: compiled vs eager on the same random inputs; on a mismatch, the first
// differing region and the first differing kernel inside it (runtime::check_model).
CheckResult check(const std::string& model_path, const std::vector<InputSpec>& inputs, const CheckOptions& options);
inline std::string check_text(const CheckResult& r) { return runtime::check_text(r); }
inline std::string check_json(const CheckResult& r) { return runtime::check_json(r); }

using ProfileOptions = runtime::ProfileOptions;
// Profiles eager and every requested mode/backend and writes the session to out_path.
session::Session profile(const std::string& model_path, const std::vector<InputSpec>& inputs,
                         const ProfileOptions& options, const std::string& out_path,
                         const runtime::ProgressFn& progress = nullptr);
// Opens a .kiln session (kiln::Error naming the file when it cannot).
session::Session open_session(const std::string& path);
// The run comparison as a text table (mode, backend, status, latency, speedup, error).
std::string runs_table(const session::Session& s);
void load_backend_plugin(const std::string& path);

using DiffOptions = report::DiffOptions;
using SessionDiff = report::SessionDiff;
// Two runs compared (engine/commands/diff.h): each a .kiln session or anything `kiln import` takes.
inline SessionDiff diff(const std::string& a, const std::string& b, const DiffOptions& options = {}) {
  return commands::diff_inputs(a, b, options);
}
// One side of a comparison read as `kiln diff` reads it, and two sessions already open compared.
inline session::Session open_diff_side(const std::string& path) { return commands::load_diff_side(path); }
inline SessionDiff diff(const session::Session& a, const session::Session& b, const DiffOptions& options = {}) {
  return report::diff_sessions(a, b, options);
}

}  // namespace kiln::api
