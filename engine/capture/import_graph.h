// TorchScript graph → Kiln's FX-style IR.
//
// import_graph(graph, observed, sources)
//   pre:  graph is a frozen, inlined forward graph (first input is `self`).
//   post: placeholders for the forward arguments (self dropped), one get_attr per frozen
//         tensor constant (named by its attribute path: "l1.weight"), scalar constants and
//         constant lists inlined as literal arguments, one call_function per remaining node
//         (control flow kept as blocks), one output node. Each value's meta comes from
//         `observed` (a run on example inputs) when present, else from its static type.
//         Names are stable: the same archive and inputs print the same text.
#pragma once

#include <unordered_map>

#include "engine/capture/node_origin.h"
#include "engine/ir/graph.h"
#include "engine/model/torch_compat.h"

namespace kiln::capture {

using ObservedMeta = std::unordered_map<const torch::jit::Value*, ir::ValueMeta>;

ir::Graph import_graph(const torch::jit::Graph& graph, const ObservedMeta& observed, SourceFiles& sources);

// Records each value's meta while an Interpreter runs (wire into InterpreterHooks::after_node).
void observe_outputs(const torch::jit::Node* node, const std::vector<c10::IValue>& outs, ObservedMeta& into);

}  // namespace kiln::capture
