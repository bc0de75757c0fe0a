#include "engine/commands/inspect_model.h"

#include <filesystem>
#include <sstream>

#include "engine/base/error.h"
#include "engine/capture/import_graph.h"
#include "engine/capture/interpreter.h"
#include "engine/capture/partition.h"
#include "engine/capture/torch_meta.h"
#include "engine/model/model_impl.h"
#include "engine/runtime/example_inputs.h"

namespace kiln::capture {

namespace fs = std::filesystem;

void check_input_count(const model::Model& model, const std::vector<InputSpec>& inputs) {
  auto names = model.forward_arg_names();
  if (names.size() == inputs.size()) return;
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  throw Error(model.path() + ": forward takes " + std::to_string(names.size()) + " input" +
              (names.size() == 1 ? "" : "s") + " (" + list + "), " + std::to_string(inputs.size()) +
              " given (pass one --input per argument)");
}

static SourceFiles source_files_for(const std::string& model_path) {
  fs::path dir = fs::path(model_path).parent_path();
  if (dir.empty()) dir = ".";
  return SourceFiles({dir.string(), (dir / "src").string()});
}

InspectResult inspect_model(const model::Model& model, const std::vector<InputSpec>& inputs, uint64_t seed) {
  check_input_count(model, inputs);
  const auto& impl = *model.impl;
  InspectResult r;
  r.inputs = inputs;
  r.parameter_count = impl.parameter_count;
  r.buffer_count = impl.buffer_count;
  r.libtorch_version = model::libtorch_version();

  auto tensors = runtime::make_inputs(inputs, seed);
  std::vector<c10::IValue> args{impl.frozen._ivalue()};
  for (auto& t : tensors) args.emplace_back(t);

  Interpreter interp(impl.graph);
  ObservedMeta observed;
  std::ostringstream printed;
  InterpreterHooks hooks;
  hooks.print_sink = &printed;
  hooks.after_node = [&](const torch::jit::Node* n, const std::vector<c10::IValue>& outs) {
    observe_outputs(n, outs, observed);
  };
  const auto& gin = impl.graph->inputs();
  for (size_t i = 1; i < gin.size() && i < args.size(); ++i) observed[gin[i]] = meta_of(args[i]);
  SourceFiles sources = source_files_for(model.path());
  try {
    interp.run(args, hooks);
  } catch (const Error& e) {
    std::string where;
    if (const auto* n = interp.failed_node()) {
      auto o = node_origin(n, sources);
      if (o.loc.known()) where = " at " + o.loc.str() + (o.loc.text.empty() ? "" : " (" + o.loc.text + ")");
    }
    std::string shapes;
    for (const auto& s : inputs) shapes += (shapes.empty() ? "" : ", ") + s.str();
    throw Error(model.path() + ": forward on inputs [" + shapes + "] failed" + where + ": " + e.what());
  }
  r.graph = import_graph(*impl.graph, observed, sources);
  r.op_histogram = r.graph.op_histogram();
  auto part = partition_graph(*impl.graph, sources);
  r.regions = partition_text(part);
  r.breaks = part.breaks;
  std::istringstream lines(printed.str());
  for (std::string l; std::getline(lines, l);) r.printed.push_back(l);
  return r;
}

}  // namespace kiln::capture
