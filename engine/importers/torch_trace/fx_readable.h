// Reading FX's readable code (GraphModule.print_readable, as TORCH_TRACE stores the
// dynamo_output_graph, aot_*_graph and inductor_*_graph stages) back into Kiln's graph IR, so that
// imported stages can be drawn as graphs:
//
//   class GraphModule(torch.nn.Module):
//       def forward(self, L_x_: "f32[4, 64][64, 1]cuda:0", L_self_modules_fc_parameters_weight_: "f32[64, 64]..."):
//           l_x_ = L_x_
//           # File: model.py:12 in forward, code: return torch.relu(self.fc(x))
//           linear: "f32[4, 64][64, 1]cuda:0" = torch._C._nn.linear(l_x_, l_self_modules_fc_parameters_weight_);  l_x_ = None
//           relu: "f32[4, 64][64, 1]cuda:0" = torch.relu(linear);  linear = None
//           return (relu,)
//
// What becomes what:
//   forward's parameters (one line or one per line), names from fx_pytree.tree_flatten_spec
//                                        → placeholders, meta from the "f32[4, 64][64, 1]cuda:0" annotation
//   parameters Dynamo lifted to inputs (L_self_modules_fc_parameters_weight_), AOT inputs marked
//   ParamAOTInput/BufferAOTInput, `x = self.attr`
//                                        → get_attr, target the attribute path ("fc.weight"), module its owner
//   `y = x` (Dynamo's local aliases)     → no node; later uses of y refer to x
//   `y: "..." = f(args, k = v)`, `x.m(args)`, `x[0]`, `a + b`, `-a`
//                                        → call_function, target "aten::add.Tensor" for torch.ops.aten.add.Tensor,
//                                          "Tensor.m" for methods, "getitem" and operator names, else as written
//   `# File: f.py:12 in fn, code: ...`   → the source location of the nodes up to the next blank line
//   `return (a, b)`                      → the output node
// Only the outermost forward is read (nested submodule classes are printed before it).
//
// pre:  any text.
// post: throws kiln::Error (one line naming what is missing) when the text has no `def forward(`;
//       otherwise the graph has placeholders and get_attr nodes first, one output node last, unique
//       value names and only refs to values defined earlier. Lines it does not understand are
//       skipped and counted, never fatal; an assignment it cannot read still becomes a node (its
//       target the expression as written) so the graph stays connected, and is counted too.
#pragma once

#include <string>
#include <string_view>

#include "engine/ir/graph.h"

namespace kiln::importers {

struct FxReadableGraph {
  ir::Graph graph;
  int skipped_lines = 0;       // statements not understood (skipped or kept as an opaque node)
  std::string first_skipped;   // the first of them, as written
};

FxReadableGraph parse_fx_readable(std::string_view text);

// Cheap test before parsing: the text has a forward signature.
bool looks_like_fx_readable(std::string_view text);

// ir::to_json (compact) of parse_fx_readable(text); "" when the text is not FX readable code or
// holds no call at all (then *error, when given, says why).
std::string fx_readable_json(std::string_view text, std::string* error = nullptr);

}  // namespace kiln::importers
