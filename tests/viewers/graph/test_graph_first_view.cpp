// The graph view's first look at a session: parameters folded into their users, time per node and
// per collapsed module, the slowest region opened at its inputs, FX code of imported stages drawn.
#include <QApplication>
#include <QGraphicsRectItem>
#include <QGraphicsView>
#include <QTest>
#include <gtest/gtest.h>

#include "engine/report/graphviz_svg.h"
#include "tests/support/paths.h"
#include "tests/support/session_builders.h"
#include "tests/viewers/app/view_fixtures.h"
#include "viewers/graph/graph_panel.h"
#include "viewers/graph/graph_time.h"

using namespace kiln;
using namespace kiln::viewers;

namespace {

#define REQUIRE_GRAPHVIZ() \
  if (!report::graphviz_available()) GTEST_SKIP() << "Graphviz is not built in"

std::string node_json(const std::string& op, const std::string& name, const std::string& target,
                      const std::vector<std::string>& refs, const std::string& module, const std::string& shape = "[8, 64]") {
  std::string args = "[";
  for (size_t i = 0; i < refs.size(); ++i) args += std::string(i ? ", " : "") + R"({"ref": ")" + refs[i] + R"("})";
  args += "]";
  return R"({"op": ")" + op + R"(", "name": ")" + name + R"(", "target": ")" + target + R"(", "args": )" + args +
         R"(, "kwargs": {}, "module": ")" + module + R"(", "outputs": [{"name": ")" + name +
         R"(", "meta": {"type": "Tensor", "dtype": "float32", "shape": )" + shape + "}}]}";
}

// x → linear(x, fc.weight, fc.bias) → relu → output; plus an unused buffer.
std::string param_graph_json() {
  return R"({"nodes": [)" + node_json("placeholder", "x", "x", {}, "") + "," +
         node_json("get_attr", "fc_weight", "fc.weight", {}, "", "[64, 64]") + "," +
         node_json("get_attr", "fc_bias", "fc.bias", {}, "", "[64]") + "," +
         node_json("get_attr", "unused", "buf", {}, "", "[1]") + "," +
         node_json("call_function", "linear", "aten::linear", {"x", "fc_weight", "fc_bias"}, "fc") + "," +
         node_json("call_function", "relu", "aten::relu", {"linear"}, "") + "," +
         R"({"op": "output", "name": "output", "target": "output", "args": [[{"ref": "relu"}]], "kwargs": {}, "module": "", "outputs": []}]})";
}

// A chain of `layers` modules of `per` adds each ("layer<i>.block"), fed by x and a weight.
std::string chain_json(int layers, int per) {
  std::string j = R"({"nodes": [)" + node_json("placeholder", "x", "x", {}, "") + "," +
                  node_json("get_attr", "w", "scale.weight", {}, "", "[64]");
  std::string prev = "x";
  for (int i = 0; i < layers * per; ++i) {
    std::string name = "n" + std::to_string(i);
    std::vector<std::string> refs{prev};
    if (i == 0) refs.push_back("w");
    j += "," + node_json("call_function", name, "aten::add", refs, "layer" + std::to_string(i / per) + ".block");
    prev = name;
  }
  return j + R"(, {"op": "output", "name": "output", "target": "output", "args": [[{"ref": ")" + prev +
         R"("}]], "kwargs": {}, "module": "", "outputs": []}]})";
}

// Region [0/0]: a small graph; region [1/0]: 8 modules x 30 adds, one kernel per module, module
// layer5 the slowest. Run 0 is eager (no kernel times), run 1 the compiled one.
std::shared_ptr<session::Session> two_region_session() {
  auto s = std::make_shared<session::Session>();
  session::CompiledRegion small, big;
  small.compile_id = "[0/0]";
  small.graphs.push_back({"captured", "", param_graph_json(), ""});
  big.compile_id = "[1/0]";
  big.region = 1;
  big.graphs.push_back({"captured", "", chain_json(8, 30), ""});
  s->regions = {small, big};
  session::Run eager, compiled;
  eager.id = 0;
  eager.mode = "eager";
  compiled.id = 1;
  compiled.mode = "default";
  compiled.backend = "kiln";
  s->runs = {eager, compiled};
  for (int m = 0; m < 8; ++m) {
    session::Kernel k;
    k.name = "k" + std::to_string(m);
    k.compile_id = "[1/0]";
    for (int i = 0; i < 30; ++i) k.nodes.push_back("n" + std::to_string(m * 30 + i));
    s->kernels.push_back(k);
    s->timeline.push_back(test::kernel_event(1, k.name, "[1/0]", 0, m == 5 ? 5000 : 1000));
  }
  session::Kernel relu;
  relu.name = "k_relu";
  relu.compile_id = "[0/0]";
  relu.nodes = {"relu"};
  s->kernels.push_back(relu);
  s->timeline.push_back(test::kernel_event(1, "k_relu", "[0/0]", 0, 500));
  return s;
}

}  // namespace

TEST(GraphModel, FoldParametersListsThemOnTheirUsers) {
  auto g = parse_graph_json(param_graph_json());
  auto f = fold_parameters(g);
  EXPECT_EQ(f.nodes.size(), 4u);  // x, linear, relu, output
  EXPECT_FALSE(f.index.count("fc_weight"));
  EXPECT_FALSE(f.index.count("unused"));
  const auto& linear = f.nodes[f.index.at("linear")];
  EXPECT_EQ(linear.params, (std::vector<std::string>{"weight f32[64, 64]", "bias f32[64]"}));
  EXPECT_EQ(linear.inputs, std::vector<int>{f.index.at("x")});
  EXPECT_EQ(f.nodes[f.index.at("relu")].inputs, std::vector<int>{f.index.at("linear")});
  EXPECT_EQ(f.folded.at("fc_weight"), "linear");
  EXPECT_EQ(params_text(linear), "weight f32[64, 64], bias f32[64]");
  // No get_attr box and no edge from one in the DOT.
  auto dot = graph_dot(f, {});
  EXPECT_EQ(dot.boxes.size(), 4u);
  EXPECT_NE(dot.dot.find("height=0.9"), std::string::npos);  // the box with a parameter line is taller
  GraphNode many;
  many.params = {"a f32[1]", "b f32[1]", "c f32[1]", "d f32[1]"};
  EXPECT_EQ(params_text(many), "a f32[1], b f32[1] +2 more");
}

TEST(GraphTime, KernelTimeIsSplitOverNodesAndSharedPerModule) {
  auto g = parse_graph_json(chain_json(2, 2));  // n0 n1 in layer0.block, n2 n3 in layer1.block
  std::map<std::string, std::string> kernel_of{{"n0", "k0"}, {"n1", "k0"}, {"n2", "k1"}};
  // k0: 400 ns over two nodes; k1: 100 ns; n3 runs as an extern aten::add (300 ns).
  auto ns = node_time_ns(g, kernel_of, {{"k0", 400}, {"k1", 100}, {"aten::add", 300}});
  EXPECT_DOUBLE_EQ(ns.at("n0"), 200);
  EXPECT_DOUBLE_EQ(ns.at("n2"), 100);
  EXPECT_DOUBLE_EQ(ns.at("n3"), 300);
  auto share = box_time_share(g, {"layer0", "layer1"}, ns);
  EXPECT_DOUBLE_EQ(share.at("module:layer0"), 0.5);
  EXPECT_DOUBLE_EQ(share.at("module:layer1"), 0.5);
  auto open = box_time_share(g, {}, ns);
  EXPECT_DOUBLE_EQ(open.at("n3"), 0.375);
  EXPECT_TRUE(box_time_share(g, {}, {}).empty());
}

TEST(GraphTime, SlowestRegionByTheRunsTimeElseByNodeCount) {
  auto s = two_region_session();
  EXPECT_EQ(timed_run(*s, 0, "[1/0]"), 1);  // the eager run has no kernel times: the compiled one
  EXPECT_EQ(timed_run(*s, 1, "[1/0]"), 1);
  EXPECT_EQ(kernel_time_ns(*s, 1, "[1/0]").at("k5"), 5000);
  EXPECT_EQ(slowest_region(*s, 0), "[1/0]");
  // Time decides over size: make the small region the slow one.
  s->timeline.push_back(test::kernel_event(1, "k_relu", "[0/0]", 0, 100000));
  EXPECT_EQ(slowest_region(*s, 1), "[0/0]");
  // No times at all: the largest region.
  s->timeline.clear();
  EXPECT_EQ(slowest_region(*s, 1), "[1/0]");
  EXPECT_EQ(region_node_count(s->regions[1]), 2 + 240 + 1);
  EXPECT_EQ(slowest_region(session::Session{}, -1), "");
}

TEST(GraphPanel, OpensTheSlowestRegionAtItsInputsWithModulesTintedByTime) {
  REQUIRE_GRAPHVIZ();
  test::PanelOn<GraphPanel> shown(900, 600, two_region_session());
  auto& [ctx, panel] = shown;
  QCoreApplication::processEvents();  // the queued choice of region
  panel.waitForLayout();
  EXPECT_EQ(ctx.current().compile_id, "[1/0]");
  EXPECT_EQ(ctx.current().run, 0);  // the selection's run is not changed
  // 240 nodes: modules collapsed; the parameter is no box of its own.
  EXPECT_EQ(panel.boxItem("w"), nullptr);
  auto* x = panel.boxItem("x");
  ASSERT_NE(x, nullptr);
  ASSERT_NE(panel.boxItem("module:layer5"), nullptr);
  // Readable, and the input is on screen.
  EXPECT_GE(panel.view()->transform().m11(), 0.6);
  QRect on_screen = panel.view()->mapFromScene(x->rect()).boundingRect();
  EXPECT_TRUE(panel.view()->viewport()->rect().contains(on_screen)) << on_screen.x() << "," << on_screen.y();
  // layer5 took 5 of the 12 us: the warmest box, its share printed.
  EXPECT_TRUE(panel.detailText("module:layer5").contains("42% of time")) << panel.detailText("module:layer5").toStdString();
  EXPECT_TRUE(panel.detailText("module:layer0").contains("8.3% of time")) << panel.detailText("module:layer0").toStdString();
  QColor hot = panel.boxItem("module:layer5")->brush().color(), cool = panel.boxItem("module:layer0")->brush().color();
  EXPECT_LT(hot.blue(), cool.blue());
  EXPECT_TRUE(panel.legendText().contains("run 1 (default, kiln)")) << panel.legendText().toStdString();
  EXPECT_TRUE(panel.statusText().contains("+1 parameters folded")) << panel.statusText().toStdString();
}

TEST(GraphPanel, ParametersAreFoldedIntoTheirUsersUnlessAskedNotTo) {
  REQUIRE_GRAPHVIZ();
  auto s = two_region_session();
  s->regions.pop_back();
  SelectionContext ctx;
  GraphPanel panel(&ctx);
  panel.resize(800, 600);
  ctx.setSession(s);
  panel.waitForLayout();
  EXPECT_EQ(panel.boxItem("fc_weight"), nullptr);
  ASSERT_NE(panel.boxItem("linear"), nullptr);
  bool listed = false;
  for (auto* child : panel.boxItem("linear")->childItems())
    if (auto* t = dynamic_cast<QGraphicsSimpleTextItem*>(child)) listed |= t->text().contains("weight f32[64, 64]");
  EXPECT_TRUE(listed);
  panel.setFoldParameters(false);
  panel.waitForLayout();
  EXPECT_NE(panel.boxItem("fc_weight"), nullptr);
}

TEST(GraphPanel, ImportedFxStagesAreDrawnAsGraphs) {
  REQUIRE_GRAPHVIZ();
  auto s = std::make_shared<session::Session>();
  s->origin = "TORCH_TRACE import";
  session::CompiledRegion r;
  r.compile_id = "[0/0]";
  // Imported before the importer kept JSON: text only, after a text stage that is no graph.
  r.graphs.push_back({"dynamo_cpp_guards_str", "TREE_GUARD_MANAGER:\n+- RootGuardManager", "", ""});
  r.graphs.push_back({"dynamo_output_graph", test::read_file(test::data("fx_readable/block_dynamo_output_graph.txt")), "", ""});
  s->regions = {r};
  SelectionContext ctx;
  GraphPanel panel(&ctx);
  panel.resize(900, 700);
  ctx.setSession(s);
  QCoreApplication::processEvents();
  panel.waitForLayout();
  EXPECT_EQ(ctx.current().stage, "dynamo_output_graph");
  EXPECT_NE(panel.boxItem("L_x_"), nullptr);
  EXPECT_NE(panel.boxItem("linear"), nullptr);
  EXPECT_EQ(panel.boxItem("L_self_modules_qkv_parameters_weight_"), nullptr);  // folded
  EXPECT_TRUE(panel.statusText().contains("+12 parameters folded")) << panel.statusText().toStdString();
}
