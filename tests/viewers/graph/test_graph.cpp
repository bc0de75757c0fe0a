// The graph view: parsing Kiln's IR JSON, module clusters and collapsing, Graphviz layout, and
// selection linking both ways.
#include <QGraphicsRectItem>
#include <QGraphicsView>
#include <QPlainTextEdit>
#include <QTest>
#include <gtest/gtest.h>

#include "engine/base/error.h"
#include "engine/report/graphviz_svg.h"
#include "viewers/graph/graph_panel.h"

using namespace kiln;
using namespace kiln::viewers;

namespace {

// A graph in ir::to_json's form: x → fc1 (module ff.fc1) → relu (ff) → fc2 (ff.fc2) → output.
std::string small_graph_json() {
  return R"({"name": "forward", "nodes": [
    {"op": "placeholder", "name": "x", "target": "x", "args": [], "kwargs": {}, "module": "",
     "outputs": [{"name": "x", "meta": {"type": "Tensor", "dtype": "float32", "shape": [8, 64]}}]},
    {"op": "call_function", "name": "linear", "target": "aten::linear", "args": [{"ref": "x"}], "kwargs": {},
     "module": "ff.fc1", "outputs": [{"name": "linear", "meta": {"type": "Tensor", "dtype": "float32", "shape": [8, 256]}}]},
    {"op": "call_function", "name": "relu", "target": "aten::relu", "args": [{"ref": "linear"}], "kwargs": {},
     "module": "ff", "outputs": [{"name": "relu", "meta": {"type": "Tensor", "dtype": "float32", "shape": [8, 256]}}]},
    {"op": "call_function", "name": "linear_1", "target": "aten::linear", "args": [{"ref": "relu"}], "kwargs": {},
     "module": "ff.fc2", "outputs": [{"name": "linear_1", "meta": {"type": "Tensor", "dtype": "float32", "shape": [8, 64]}}]},
    {"op": "output", "name": "output", "target": "output", "args": [[{"ref": "linear_1"}]], "kwargs": {}, "module": "",
     "outputs": []}]})";
}

std::shared_ptr<session::Session> small_session() {
  auto s = std::make_shared<session::Session>();
  session::CompiledRegion r;
  r.compile_id = "[0/0]";
  r.region = 0;
  r.graphs.push_back({"captured", "text", small_graph_json(), ""});
  r.graphs.push_back({"dynamo_output_graph", "def forward(x): ...", "", ""});
  s->regions = {r};
  session::Kernel k;
  k.name = "k0_fused_relu";
  k.compile_id = "[0/0]";
  k.nodes = {"relu"};
  s->kernels = {k};
  session::GraphBreakRecord b;
  b.info.id = "KB001";
  b.info.reason = "print() is a side effect";
  b.info.ends_region = 0;
  s->breaks = {b};
  return s;
}

#define REQUIRE_GRAPHVIZ() \
  if (!report::graphviz_available()) GTEST_SKIP() << "Graphviz is not built in"

}  // namespace

TEST(GraphModel, ParsesNodesShapesModulesAndEdges) {
  auto g = parse_graph_json(small_graph_json());
  ASSERT_EQ(g.nodes.size(), 5u);
  const auto& fc1 = g.nodes[g.index.at("linear")];
  EXPECT_EQ(fc1.target, "aten::linear");
  EXPECT_EQ(fc1.shape, "f32[8, 256]");
  EXPECT_EQ(fc1.module, "ff.fc1");
  EXPECT_EQ(fc1.inputs, std::vector<int>{0});
  EXPECT_EQ(g.nodes[g.index.at("output")].inputs, std::vector<int>{3});  // refs inside nested lists
  EXPECT_THROW(parse_graph_json("{\"nodes\": 3}"), kiln::Error);
  EXPECT_THROW(parse_graph_json("not json"), kiln::Error);
}

TEST(GraphModel, CollapsedModulesBecomeOneBox) {
  auto g = parse_graph_json(small_graph_json());
  EXPECT_TRUE(default_collapsed(g).empty());  // small graphs start expanded
  // Above the threshold: the shallowest depth with 8 modules, else the deepest (here ff.fc1, ff.fc2).
  EXPECT_EQ(default_collapsed(g, 2), (std::set<std::string>{"ff.fc1", "ff.fc2"}));
  std::set<std::string> collapsed{"ff"};
  EXPECT_EQ(box_of(g.nodes[1], collapsed), "module:ff");
  EXPECT_EQ(box_of(g.nodes[0], collapsed), "x");
  auto dot = graph_dot(g, collapsed);
  EXPECT_EQ(dot.boxes.size(), 3u);  // x, module:ff, output
  EXPECT_EQ(dot.members.at("module:ff"), 3);
  EXPECT_NE(graph_dot(g, {}).dot.find("subgraph \"cluster_ff.fc1\""), std::string::npos);
}

TEST(GraphModel, PlainLayoutGivesEveryBoxAPlace) {
  REQUIRE_GRAPHVIZ();
  auto g = parse_graph_json(small_graph_json());
  auto layout = layout_graph(g, {});
  ASSERT_TRUE(layout.error.empty()) << layout.error;
  std::set<std::string> ids;
  for (const auto& b : layout.boxes) {
    ids.insert(b.id);
    EXPECT_GT(b.w, 0);
    EXPECT_GE(b.y, -1);
    EXPECT_LE(b.y + b.h, layout.height + 1);
  }
  EXPECT_EQ(ids, (std::set<std::string>{"x", "linear", "relu", "linear_1", "output"}));
  EXPECT_EQ(layout.edges.size(), 4u);
  // Top to bottom: the input above the output.
  double y_x = -1, y_out = -1;
  for (const auto& b : layout.boxes) {
    if (b.id == "x") y_x = b.y;
    if (b.id == "output") y_out = b.y;
  }
  EXPECT_LT(y_x, y_out);
}

TEST(GraphPanel, ClickSelectsANodeAndAKernelLightsUpItsNodes) {
  REQUIRE_GRAPHVIZ();
  SelectionContext ctx;
  GraphPanel panel(&ctx);
  panel.resize(800, 600);
  panel.show();
  ctx.setSession(small_session());
  panel.waitForLayout();
  auto* relu = panel.boxItem("relu");
  ASSERT_NE(relu, nullptr);
  auto* view = panel.findChild<QGraphicsView*>();
  ASSERT_NE(view, nullptr);
  QPoint at = view->mapFromScene(relu->rect().center());
  QTest::mouseClick(view->viewport(), Qt::LeftButton, {}, at);
  EXPECT_EQ(ctx.current().node, "relu");
  EXPECT_EQ(ctx.current().kernel, "k0_fused_relu");  // provenance follows
  ctx.selectNode("[0/0]", "");
  ctx.selectKernel("k0_fused_relu", "[0/0]");
  EXPECT_EQ(panel.highlighted(), (std::set<std::string>{"relu"}));
}

TEST(GraphPanel, ImportedTextStagesAreShownAsText) {
  SelectionContext ctx;
  GraphPanel panel(&ctx);
  ctx.setSession(small_session());
  ctx.setStage("dynamo_output_graph");
  EXPECT_EQ(panel.boxItem("relu"), nullptr);
  auto* text = panel.findChild<QPlainTextEdit*>();
  ASSERT_NE(text, nullptr);
  EXPECT_TRUE(text->toPlainText().contains("def forward"));
}

TEST(GraphPanel, BigGraphsStartWithModulesCollapsed) {
  REQUIRE_GRAPHVIZ();
  GraphModel g;
  for (int i = 0; i < 300; ++i) {
    GraphNode n;
    n.name = "n" + std::to_string(i);
    n.op = "call_function";
    n.target = "aten::add";
    n.module = "layer" + std::to_string(i / 30) + ".block";
    if (i) n.inputs = {i - 1};
    g.index[n.name] = i;
    g.nodes.push_back(n);
  }
  EXPECT_EQ(default_collapsed(g).size(), 10u);
  SelectionContext ctx;
  GraphPanel panel(&ctx);
  panel.showModel(g, default_collapsed(g));
  panel.waitForLayout();
  EXPECT_NE(panel.boxItem("module:layer3"), nullptr);
  EXPECT_EQ(panel.boxItem("n95"), nullptr);
}
