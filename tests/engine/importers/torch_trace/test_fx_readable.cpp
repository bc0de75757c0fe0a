// Reading FX's readable graph code (TORCH_TRACE's dynamo_output_graph, aot_*_graph and
// inductor_*_graph payloads) back into the graph IR: placeholders from the signature, lifted
// parameters as get_attr, aliases, calls, methods, getitem, operators, source lines, the output,
// and lines it cannot read.
#include <gtest/gtest.h>

#include <map>

#include "engine/base/error.h"
#include "engine/importers/torch_trace/fx_readable.h"
#include "engine/importers/torch_trace/torch_trace.h"
#include "engine/ir/graph.h"
#include "tests/support/paths.h"

using namespace kiln;  // NOLINT
using namespace kiln::importers;  // NOLINT

namespace {

std::map<std::string, const ir::Node*> by_name(const ir::Graph& g) {
  std::map<std::string, const ir::Node*> out;
  for (const auto& n : g.nodes) out[n.name()] = &n;
  return out;
}

std::vector<std::string> refs(const ir::Node& n) {
  std::vector<std::string> out;
  std::function<void(const ir::Arg&)> walk = [&](const ir::Arg& a) {
    if (a.kind == ir::Arg::Kind::Ref) out.push_back(a.ref);
    for (const auto& i : a.items) walk(i);
  };
  for (const auto& a : n.args) walk(a);
  for (const auto& kw : n.kwargs) walk(kw.second);
  return out;
}

}  // namespace

TEST(FxReadable, DynamoOutputGraphOfTheBlock) {
  auto r = parse_fx_readable(test::read_file(test::data("fx_readable/block_dynamo_output_graph.txt")));
  const auto& g = r.graph;
  EXPECT_EQ(ir::verify(g), std::vector<std::string>{});
  auto n = by_name(g);
  // The input: a placeholder with the annotation's meta; Dynamo's alias l_x_ adds no node.
  ASSERT_TRUE(n.count("L_x_"));
  EXPECT_EQ(n["L_x_"]->op, ir::NodeOp::Placeholder);
  EXPECT_EQ(n["L_x_"]->outputs[0].meta.str(), "f32[2, 16, 64]");
  EXPECT_EQ(n["L_x_"]->outputs[0].meta.device, "cuda:0");
  EXPECT_EQ(n["L_x_"]->outputs[0].meta.stride, (std::vector<int64_t>{1024, 64, 1}));
  EXPECT_FALSE(n.count("l_x_"));
  // Lifted parameters are get_attr nodes with their module path.
  const auto* w = n.at("L_self_modules_qkv_parameters_weight_");
  EXPECT_EQ(w->op, ir::NodeOp::GetAttr);
  EXPECT_EQ(w->target, "qkv.weight");
  EXPECT_EQ(w->module_path, "qkv");
  EXPECT_EQ(w->outputs[0].meta.str(), "f32[192, 64]");
  // linear: "f32[2, 16, 192]..." = torch._C._nn.linear(layer_norm, l_self_..._weight_, l_self_..._bias_)
  const auto* linear = n.at("linear");
  EXPECT_EQ(linear->target, "torch._C._nn.linear");
  EXPECT_EQ(refs(*linear), (std::vector<std::string>{"layer_norm", "L_self_modules_qkv_parameters_weight_",
                                                     "L_self_modules_qkv_parameters_bias_"}));
  EXPECT_EQ(linear->outputs[0].meta.str(), "f32[2, 16, 192]");
  EXPECT_EQ(linear->loc.line, 66);
  EXPECT_EQ(linear->loc.file, "/home/user/kiln/examples/data/src/sample_models.py");
  EXPECT_EQ(linear->loc.text, "q, k, v = self.qkv(self.ln1(x)).chunk(3, dim=-1)");
  // chunk = linear.chunk(3, dim = -1): a method, no annotation; q = chunk[0]: getitem.
  EXPECT_EQ(n.at("chunk")->target, "Tensor.chunk");
  EXPECT_EQ(refs(*n.at("chunk")), std::vector<std::string>{"linear"});
  ASSERT_EQ(n.at("chunk")->kwargs.size(), 1u);
  EXPECT_EQ(n.at("chunk")->kwargs[0].first, "dim");
  EXPECT_EQ(n.at("chunk")->kwargs[0].second.i, -1);
  EXPECT_EQ(n.at("q")->target, "getitem");
  EXPECT_EQ(n.at("q")->args[1].i, 0);
  // truediv = matmul / 4.0; x = l_x_ + linear_1 (the alias resolved to the placeholder).
  EXPECT_EQ(n.at("truediv")->target, "truediv");
  EXPECT_DOUBLE_EQ(n.at("truediv")->args[1].f, 4.0);
  EXPECT_EQ(refs(*n.at("x")), (std::vector<std::string>{"L_x_", "linear_1"}));
  EXPECT_EQ(n.at("att")->target, "torch.softmax");
  // return (add_1,)
  EXPECT_EQ(g.nodes.back().op, ir::NodeOp::Output);
  EXPECT_EQ(refs(g.nodes.back()), std::vector<std::string>{"add_1"});
  EXPECT_EQ(r.skipped_lines, 0) << r.first_skipped;
  int placeholders = 0, params = 0;
  for (const auto& node : g.nodes) {
    placeholders += node.op == ir::NodeOp::Placeholder;
    params += node.op == ir::NodeOp::GetAttr;
  }
  EXPECT_EQ(placeholders, 1);
  EXPECT_EQ(params, 12);
}

TEST(FxReadable, AotGraphWithOneParameterPerLineAndAtenOverloads) {
  auto r = parse_fx_readable(test::read_file(test::data("fx_readable/block_aot_inference_graph.txt")));
  const auto& g = r.graph;
  EXPECT_EQ(ir::verify(g), std::vector<std::string>{});
  auto n = by_name(g);
  for (int i = 0; i <= 12; ++i) ASSERT_TRUE(n.count("arg" + std::to_string(i) + "_1")) << i;
  EXPECT_EQ(n["arg3_1"]->outputs[0].meta.str(), "f32[192, 64]");
  // var_mean = torch.ops.aten.var_mean.correction(arg0_1, [2], correction = 0, keepdim = True)
  const auto* vm = n.at("var_mean");
  EXPECT_EQ(vm->target, "aten::var_mean.correction");
  EXPECT_EQ(refs(*vm), std::vector<std::string>{"arg0_1"});
  ASSERT_EQ(vm->args.size(), 2u);
  EXPECT_EQ(vm->args[1].kind, ir::Arg::Kind::List);
  EXPECT_EQ(vm->kwargs.size(), 2u);
  EXPECT_EQ(n.at("addmm")->target, "aten::addmm.default");
  EXPECT_EQ(refs(*n.at("addmm")), (std::vector<std::string>{"arg4_1", "view", "permute"}));
  EXPECT_EQ(r.skipped_lines, 0) << r.first_skipped;
}

TEST(FxReadable, InductorPostGradGraphAndSymbolicSizes) {
  auto post = parse_fx_readable(test::read_file(test::data("fx_readable/block_inductor_post_grad_graph.txt")));
  EXPECT_EQ(ir::verify(post.graph), std::vector<std::string>{});
  EXPECT_GT(post.graph.nodes.size(), 40u);
  EXPECT_EQ(post.skipped_lines, 0) << post.first_skipped;

  auto sym = parse_fx_readable(test::read_file(test::data("fx_readable/breaky_dynamic_symbolic_graph.txt")));
  auto n = by_name(sym.graph);
  EXPECT_EQ(n.at("s17")->outputs[0].meta.kind, ir::ValueMeta::Kind::Int);
  EXPECT_EQ(n.at("L_y_")->outputs[0].meta.str(), "f32[s17, 64]");
  EXPECT_EQ(n.at("sum_1")->target, "Tensor.sum");
  EXPECT_EQ(n.at("gt")->target, "gt");  // sum_1 > 0
  EXPECT_EQ(n.at("gt")->outputs[0].meta.dtype, ir::DType::Bool);  // "b8[][]cuda:0"
}

TEST(FxReadable, SelfAttributesAreGetAttr) {
  // tlparse's links.log: l__self___param: "f32[2][1]cpu" = self.L__self___param
  auto r = parse_fx_readable(test::read_file(test::data("fx_readable/tlparse_links_dynamo_output_graph.txt")));
  auto n = by_name(r.graph);
  ASSERT_TRUE(n.count("l__self___param"));
  EXPECT_EQ(n["l__self___param"]->op, ir::NodeOp::GetAttr);
  EXPECT_EQ(n["l__self___param"]->target, "param");
  EXPECT_EQ(refs(*n.at("y")), std::vector<std::string>{"l__self___param"});
  EXPECT_EQ(ir::verify(r.graph), std::vector<std::string>{});
}

TEST(FxReadable, JointGraphsFlattenTheirInputsAndMarkParameters) {
  // The joint form AOT prints for training (fx_pytree inputs, multi-line return), with the
  // ParamAOTInput comments of torch >= 2.8.
  const char* text =
      "class joint_helper(torch.nn.Module):\n"
      "    def forward(self, primals, tangents):\n"
      "        primals_1, primals_2, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)\n"
      "        mv: \"f32[8][1]cpu\" = torch.ops.aten.mv.default(primals_1, primals_2)\n"
      "        neg: \"f32[8][1]cpu\" = -mv\n"
      "        return pytree.tree_unflatten([\n"
      "            neg,\n"
      "            tangents_1,\n"
      "        ], self._out_spec)\n";
  auto r = parse_fx_readable(text);
  auto n = by_name(r.graph);
  EXPECT_FALSE(n.count("primals"));
  ASSERT_TRUE(n.count("primals_1"));
  EXPECT_EQ(n.at("neg")->target, "neg");
  EXPECT_EQ(refs(*n.at("mv")), (std::vector<std::string>{"primals_1", "primals_2"}));
  EXPECT_EQ(refs(r.graph.nodes.back()), (std::vector<std::string>{"neg", "tangents_1"}));
  EXPECT_EQ(ir::verify(r.graph), std::vector<std::string>{});

  const char* marked =
      "class <lambda>(torch.nn.Module):\n"
      "    def forward(\n"
      "        self,\n"
      "        primals_1: \"f32[4, 4][4, 1]cpu\",  # ParamAOTInput(target='fc.weight')\n"
      "        primals_2: \"f32[2, 4][4, 1]cpu\",  # PlainAOTInput(idx=0)\n"
      "    ):\n"
      "        mm: \"f32[2, 4][4, 1]cpu\" = torch.ops.aten.mm.default(primals_2, primals_1)\n"
      "        return (mm,)\n";
  auto marked_graph = parse_fx_readable(marked);
  auto m = by_name(marked_graph.graph);
  EXPECT_EQ(m.at("primals_1")->op, ir::NodeOp::GetAttr);
  EXPECT_EQ(m.at("primals_1")->target, "fc.weight");
  EXPECT_EQ(m.at("primals_1")->module_path, "fc");
  EXPECT_EQ(m.at("primals_2")->op, ir::NodeOp::Placeholder);
}

TEST(FxReadable, UnknownLinesAreCountedNeverFatal) {
  const char* text =
      "class GraphModule(torch.nn.Module):\n"
      "    class submod_0(torch.nn.Module):\n"
      "        def forward(self, a):\n"
      "            return (a,)\n"
      "    def forward(self, x: \"f32[4][1]cpu\"):\n"
      "        torch._check(x.size(0) > 2)\n"
      "        y: \"f32[4][1]cpu\" = (x if flag else x) + 1\n"
      "        z: \"f32[4][1]cpu\" = torch.relu(y);  y = None\n"
      "        return (z,)\n";
  auto r = parse_fx_readable(text);
  EXPECT_EQ(r.skipped_lines, 2);
  EXPECT_EQ(r.first_skipped, "torch._check(x.size(0) > 2)");
  auto n = by_name(r.graph);
  ASSERT_TRUE(n.count("y"));  // kept as an opaque node so the graph stays connected
  EXPECT_EQ(refs(*n.at("y")), std::vector<std::string>{"x"});
  EXPECT_EQ(refs(*n.at("z")), std::vector<std::string>{"y"});
  EXPECT_FALSE(n.count("a"));  // the nested submodule's forward is not read
  EXPECT_EQ(ir::verify(r.graph), std::vector<std::string>{});

  EXPECT_THROW(parse_fx_readable("def f(x):\n  return x\n"), Error);
  std::string error;
  EXPECT_EQ(fx_readable_json("just some text", &error), "");
  EXPECT_NE(error.find("no 'def forward('"), std::string::npos);
  EXPECT_EQ(fx_readable_json("def forward(self, x):\n    return (x,)\n", &error), "");  // no call: not a graph worth drawing
  EXPECT_NE(fx_readable_json(test::read_file(test::data("fx_readable/block_dynamo_output_graph.txt"))).find("\"qkv.weight\""),
            std::string::npos);
  // Truncated and unbalanced text: a graph of what there is, no crash.
  std::string cut = test::read_file(test::data("fx_readable/block_aot_inference_graph.txt")).substr(0, 3000);
  EXPECT_NO_THROW(parse_fx_readable(cut + "(((\n"));
}

TEST(FxReadable, ImportKeepsGraphStagesAsJsonBesideTheirText) {
  auto s = import_torch_trace(test::data("traces/block_default.log"));
  const session::StageGraph* dynamo = nullptr;
  for (const auto& r : s.regions)
    for (const auto& g : r.graphs)
      if (g.stage == "dynamo_output_graph") dynamo = &g;
  ASSERT_NE(dynamo, nullptr);
  EXPECT_NE(dynamo->text.find("def forward("), std::string::npos);
  EXPECT_NE(dynamo->json.find("\"torch._C._nn.linear\""), std::string::npos);
  for (const auto& n : s.import_notes) EXPECT_EQ(n.what.find("FX graph lines"), std::string::npos) << n.what;
}
