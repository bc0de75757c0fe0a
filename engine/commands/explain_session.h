// The session `kiln explain -o FILE` writes. No LibTorch types: the CLI includes this through
// engine/api.
//
// explain_session(model_path, calls, options, result, costs)
//   pre:  result = explain_model(model at model_path, calls, options); costs, when given, measured
//         on the same model, calls and options (measure_explain_costs).
//   post: origin "kiln explain"; the environment; the model (path, SHA-256, the first call's inputs,
//         parameters, op histogram); the breaks with their hits, each region's cache entries (guards,
//         symbols, recompile reason, compile time, hits, the captured graph) and the events. With
//         costs: one run (mode default, the options' backend, status ok, the warm passes' mean call
//         as its median) with the warm passes' host timeline, the break costs of that run (lost
//         fusion included) and the recompile costs (session::RecompileCosts).
// write_explain_session(path, ...): the same, saved to `path` (session::save_session).
#pragma once

#include <string>
#include <vector>

#include "engine/commands/explain.h"
#include "engine/session/session.h"

namespace kiln::runtime {

session::Session explain_session(const std::string& model_path, const std::vector<std::vector<InputSpec>>& calls,
                                 const CompileOptions& options, const ExplainResult& result,
                                 const ExplainCosts* costs);
void write_explain_session(const std::string& path, const std::string& model_path,
                           const std::vector<std::vector<InputSpec>>& calls, const CompileOptions& options,
                           const ExplainResult& result, const ExplainCosts* costs);

}  // namespace kiln::runtime
