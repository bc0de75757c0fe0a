// The graph view: parsing Kiln's IR JSON, module clusters and collapsing, Graphviz layout, and
// selection linking both ways.
#include <QGraphicsRectItem>
#include <QGraphicsSimpleTextItem>
#include <QGraphicsView>
#include <QPlainTextEdit>
#include <QTest>
#include <gtest/gtest.h>

#include "engine/base/error.h"
#include "engine/report/graphviz_svg.h"
#include "tests/support/session_builders.h"
#include "tests/viewers/app/view_fixtures.h"
#include "viewers/graph/graph_panel.h"
#include "viewers/graph/graphviz_layout.h"

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
  EXPECT_TRUE(fc1.tensor);
  EXPECT_FALSE(g.nodes[g.index.at("output")].tensor);
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
  test::PanelOn<GraphPanel> shown(800, 600, small_session());
  auto& [ctx, panel] = shown;
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

TEST(GraphModel, LayoutGivesModuleClustersAroundTheirNodes) {
  REQUIRE_GRAPHVIZ();
  auto g = parse_graph_json(small_graph_json());
  auto layout = layout_graph(g, {});
  ASSERT_TRUE(layout.error.empty()) << layout.error;
  std::map<std::string, LaidOutBox> boxes;
  for (const auto& b : layout.boxes) boxes[b.id] = b;
  std::map<std::string, LaidOutCluster> clusters;
  for (const auto& c : layout.clusters) clusters[c.name] = c;
  ASSERT_EQ(clusters.size(), 3u);  // ff, ff.fc1, ff.fc2
  EXPECT_EQ(clusters.at("ff").depth, 0);
  EXPECT_EQ(clusters.at("ff.fc1").depth, 1);
  auto inside = [](const LaidOutBox& b, const LaidOutCluster& c) {
    return b.x >= c.x - 0.5 && b.y >= c.y - 0.5 && b.x + b.w <= c.x + c.w + 0.5 && b.y + b.h <= c.y + c.h + 0.5;
  };
  EXPECT_TRUE(inside(boxes.at("linear"), clusters.at("ff.fc1")));
  EXPECT_TRUE(inside(boxes.at("relu"), clusters.at("ff")));
  EXPECT_FALSE(inside(boxes.at("relu"), clusters.at("ff.fc1")));
  EXPECT_FALSE(inside(boxes.at("x"), clusters.at("ff")));
  for (const auto& e : layout.edges) {
    EXPECT_GE(e.points.size(), 4u);
    EXPECT_TRUE(e.has_tip);
  }
}

TEST(GraphvizLayout, ReadsAnyDotAndNamesWhatIsWrong) {
  REQUIRE_GRAPHVIZ();
  auto ok = graphviz_layout("digraph { a [label=\"aten::add\\nf32[4]\"]; a -> b; subgraph cluster_m { label=\"blk\"; b; } }");
  ASSERT_TRUE(ok.error.empty()) << ok.error;
  ASSERT_EQ(ok.boxes.size(), 2u);
  EXPECT_EQ(ok.boxes[0].label, "aten::add\\nf32[4]");
  ASSERT_EQ(ok.clusters.size(), 1u);
  EXPECT_EQ(ok.clusters[0].name, "m");
  EXPECT_EQ(ok.clusters[0].label, "blk");
  auto bad = graphviz_layout("digraph { a -> ");
  EXPECT_NE(bad.error.find("DOT does not parse"), std::string::npos) << bad.error;
  auto big = graphviz_layout("digraph { a -> b -> c }", 2);
  EXPECT_NE(big.error.find("3 nodes"), std::string::npos) << big.error;
}

namespace {

// small_session with a profiled run: k0_fused_relu takes 2 x 1.5 us in run 7.
std::shared_ptr<session::Session> timed_session() {
  auto s = small_session();
  session::Run run;
  run.id = 7;
  run.mode = "default";
  run.backend = "kiln";
  s->runs = {run};
  for (int i = 0; i < 2; ++i)
    s->timeline.push_back(test::kernel_event(7, "k0_fused_relu", "[0/0]", 1000 * i * 10, 1500, "host:1"));
  return s;
}

}  // namespace

TEST(GraphPanel, NodesWithoutAKernelAreMarkedExternAndTimesShowPerKernel) {
  REQUIRE_GRAPHVIZ();
  SelectionContext ctx;
  GraphPanel panel(&ctx);
  panel.resize(800, 600);
  ctx.setSession(timed_session());
  ctx.setRun(-1);
  panel.waitForLayout();
  // The linears run outside Kiln's kernels (extern calls); relu is fused.
  EXPECT_EQ(panel.externNodes(), (std::set<std::string>{"linear", "linear_1"}));
  EXPECT_EQ(panel.detailText("relu"), "k0_fused_relu");  // no run selected: no time
  ctx.setRun(7);
  EXPECT_TRUE(panel.detailText("relu").contains("3.0 us")) << panel.detailText("relu").toStdString();
  QColor tint = panel.boxItem("relu")->brush().color();
  EXPECT_LT(tint.blue(), tint.red());  // the hottest kernel is tinted warm
}

TEST(GraphPanel, DotOnlyStagesAreLaidOutWithTheirLabels) {
  REQUIRE_GRAPHVIZ();
  auto s = small_session();
  s->regions[0].graphs.push_back({"imported_dot", "", "", "digraph { n0 [label=\"aten::mm\"]; n1 [label=\"output\"]; n0 -> n1; }"});
  SelectionContext ctx;
  GraphPanel panel(&ctx);
  ctx.setSession(s);
  ctx.setStage("imported_dot");
  panel.waitForLayout();
  ASSERT_NE(panel.boxItem("n0"), nullptr);
  ASSERT_NE(panel.boxItem("n1"), nullptr);
  EXPECT_EQ(panel.boxItem("relu"), nullptr);
  bool labelled = false;
  for (auto* child : panel.boxItem("n0")->childItems())
    if (auto* t = dynamic_cast<QGraphicsSimpleTextItem*>(child)) labelled |= t->text() == "aten::mm";
  EXPECT_TRUE(labelled);
}

TEST(GraphPanel, SearchExpandsTheModuleOfAMatchAndSelectsIt) {
  REQUIRE_GRAPHVIZ();
  auto s = small_session();
  SelectionContext ctx;
  GraphPanel panel(&ctx);
  panel.resize(800, 600);
  ctx.setSession(s);
  panel.waitForLayout();
  panel.showModel(panel.model(), {"ff"});  // everything of ff in one box
  panel.waitForLayout();
  ASSERT_NE(panel.boxItem("module:ff"), nullptr);
  panel.find("relu");
  panel.waitForLayout();
  EXPECT_TRUE(panel.collapsed().empty());
  ASSERT_NE(panel.boxItem("relu"), nullptr);
  EXPECT_EQ(ctx.current().node, "relu");
  EXPECT_EQ(panel.highlighted().count("relu"), 1u);
  panel.find("aten::linear");  // Enter again: the next match
  EXPECT_EQ(ctx.current().node, "linear");
  panel.find("aten::linear");
  EXPECT_EQ(ctx.current().node, "linear_1");
  panel.find("no_such_op");
  EXPECT_EQ(ctx.current().node, "linear_1");
}

TEST(GraphPanel, DoubleClickTogglesAModuleAndStaleLayoutsAreDropped) {
  REQUIRE_GRAPHVIZ();
  test::PanelOn<GraphPanel> shown(800, 600, small_session());
  auto& [ctx, panel] = shown;
  panel.waitForLayout();
  // Two layouts in a row: only the second is drawn.
  panel.showModel(panel.model(), {"ff"});
  panel.showModel(panel.model(), {"ff.fc1"});
  panel.waitForLayout();
  EXPECT_EQ(panel.boxItem("module:ff"), nullptr);
  auto* fc1 = panel.boxItem("module:ff.fc1");
  ASSERT_NE(fc1, nullptr);
  QPoint at = panel.view()->mapFromScene(fc1->rect().center());
  QTest::mouseDClick(panel.view()->viewport(), Qt::LeftButton, {}, at);
  panel.waitForLayout();
  EXPECT_TRUE(panel.collapsed().empty());
  EXPECT_NE(panel.boxItem("linear"), nullptr);
}

TEST(GraphPanel, AKernelChosenElsewhereLightsUpExactlyItsNodesAndIsCentred) {
  REQUIRE_GRAPHVIZ();
  // A chain of 60 adds, too long to show at 1:1; kernel k_far computes n50 and n51.
  std::string json = R"({"name": "forward", "nodes": [)";
  for (int i = 0; i < 60; ++i) {
    std::string args = i ? R"([{"ref": "n)" + std::to_string(i - 1) + R"("}])" : "[]";
    json += std::string(i ? "," : "") + R"({"op": "call_function", "name": "n)" + std::to_string(i) +
            R"(", "target": "aten::add", "args": )" + args + R"(, "kwargs": {}, "module": "", "outputs": [{"name": "o", "meta": {"type": "Tensor", "dtype": "float32", "shape": [4]}}]})";
  }
  json += "]}";
  auto s = std::make_shared<session::Session>();
  session::CompiledRegion r;
  r.compile_id = "[0/0]";
  r.graphs.push_back({"captured", "", json, ""});
  s->regions = {r};
  session::Kernel near, far;
  near.name = "k_near";
  near.compile_id = far.compile_id = "[0/0]";
  near.nodes = {"n1", "n2"};
  far.name = "k_far";
  far.nodes = {"n50", "n51"};
  s->kernels = {near, far};
  test::PanelOn<GraphPanel> shown(600, 400, s);
  auto& [ctx, panel] = shown;
  panel.waitForLayout();
  ASSERT_EQ(panel.model().nodes.size(), 60u);
  panel.view()->setTransform(QTransform());  // 1:1: most of the chain is off screen
  panel.view()->centerOn(panel.boxItem("n0"));
  ctx.selectKernel("k_far", "[0/0]");
  EXPECT_EQ(panel.highlighted(), (std::set<std::string>{"n50", "n51"}));
  QPointF centre = panel.view()->mapToScene(panel.view()->viewport()->rect().center());
  QRectF around = panel.boxItem("n50")->rect() | panel.boxItem("n51")->rect();
  EXPECT_LT(QLineF(centre, around.center()).length(), 80);
  EXPECT_EQ(panel.externNodes().size(), 56u);  // every add outside the two kernels
}
