// The session kiln explain writes; see explain_session.h.
#include "engine/commands/explain_session.h"

#include "engine/base/sha256.h"
#include "engine/commands/profile_model.h"
#include "engine/model/model_impl.h"
#include "engine/session/store.h"

namespace kiln::runtime {

session::Session explain_session(const std::string& model_path, const std::vector<std::vector<InputSpec>>& calls,
                                 const CompileOptions& options, const ExplainResult& result,
                                 const ExplainCosts* costs) {
  session::Session s;
  s.origin = "kiln explain";
  s.env = current_environment();
  s.model.path = model_path;
  s.model.sha256 = sha256_file(model_path);
  if (!calls.empty())
    for (const auto& in : calls.front()) s.model.inputs.push_back(in.str());
  auto model = model::load_model(model_path);
  s.model.parameter_count = model.parameter_count();
  for (const auto* n : model.impl->graph->nodes()) ++s.model.op_histogram[n->kind().toQualString()];

  for (size_t i = 0; i < result.breaks.size(); ++i) {
    session::GraphBreakRecord b;
    b.info = result.breaks[i];
    b.hits = i < result.break_hits.size() ? result.break_hits[i] : 0;
    s.breaks.push_back(std::move(b));
  }
  for (const auto& info : result.regions)
    for (const auto& e : info.entries) s.regions.push_back(session_region(info.index, e));
  s.events = result.events;
  if (!costs) return s;

  session::Run run;
  run.id = 0;
  run.mode = options.mode;
  run.backend = options.backend;
  run.device = "cpu";
  run.latency.median_ms = costs->pass.warm_call_ms;
  run.latency.iterations = costs->rounds * costs->calls;
  run.compile_cold_ms = costs->pass.cold_ms;
  s.runs.push_back(run);
  for (auto e : costs->timeline) {
    e.run = run.id;
    s.timeline.push_back(std::move(e));
  }
  for (auto c : costs->breaks) {
    c.run = run.id;
    s.break_costs.push_back(std::move(c));
  }
  s.recompile_costs = recompile_costs(*costs);
  return s;
}

void write_explain_session(const std::string& path, const std::string& model_path,
                           const std::vector<std::vector<InputSpec>>& calls, const CompileOptions& options,
                           const ExplainResult& result, const ExplainCosts* costs) {
  session::save_session(path, explain_session(model_path, calls, options, result, costs));
}

}  // namespace kiln::runtime
