// Inspection: the model's whole forward graph in Kiln's IR, with every value's meta
// from one run on example inputs (the work behind `kiln inspect`).
//
// inspect_model(model, inputs)
//   pre:  inputs has one spec per forward argument; seed 0 draws fresh random inputs.
//   post: graph verifies; metas are concrete for every value the run reached (values in
//         branches not taken keep their static types); prim::Print output is collected in
//         `printed`, not written to stdout.
//   error: kiln::Error naming the model and the problem (input count, a failing op with its
//         source line, e.g. a shape mismatch).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "engine/ir/input_spec.h"
#include "engine/capture/capture_types.h"
#include "engine/ir/graph.h"
#include "engine/model/model.h"

namespace kiln::capture {

struct InspectResult {
  ir::Graph graph;
  std::vector<InputSpec> inputs;
  std::map<std::string, int> op_histogram;
  int64_t parameter_count = 0;
  int64_t buffer_count = 0;
  std::string libtorch_version;
  std::vector<std::string> printed;  // lines the model printed during the run
  std::string regions;               // the capture partition as text (regions, steps, breaks)
  std::vector<GraphBreak> breaks;    // the graph breaks capture finds
};

InspectResult inspect_model(const model::Model& model, const std::vector<InputSpec>& inputs, uint64_t seed = 0);

// Checks the number of inputs against forward's signature; throws kiln::Error naming the model.
void check_input_count(const model::Model& model, const std::vector<InputSpec>& inputs);

}  // namespace kiln::capture
