// The graph view's colouring by time difference while two sessions are compared.
#include <gtest/gtest.h>

#include "tests/viewers/app/session_fixtures.h"
#include "tests/viewers/app/view_fixtures.h"
#include "viewers/graph/graph_compare.h"
#include "viewers/graph/graph_panel.h"

using namespace kiln;
using namespace kiln::viewers;

namespace {
GraphModel captured_graph(const session::Session& s) {
  for (const auto& g : s.regions.at(0).graphs)
    if (!g.json.empty()) return fold_parameters(parse_graph_json(g.json));
  return {};
}
double self_ms(const report::StructureSide& side, const std::string& module) {
  for (const auto& r : side.time.modules)
    if (r.key == module && !r.unattributed) return side.time.per_iter_ms(r.total_ns);
  return -1;
}
}  // namespace

TEST(BoxTimeChange, NodesTakeTheirModulesSelfTimeOnBothSides) {
  const auto c = test::block_comparison();
  const auto& st = c->diff->structure;
  const GraphModel g = captured_graph(*test::profiled_block());
  ASSERT_FALSE(g.nodes.empty());
  const auto change = box_time_change(g, {}, st);
  int qkv = 0, scalars = 0;
  for (const auto& n : g.nodes) {
    auto it = change.find(n.name);
    if (n.op != "call_function" || !n.tensor) {
      EXPECT_EQ(it, change.end()) << n.name;  // inputs, outputs, scalar and shape arithmetic
      scalars += n.op == "call_function";
      continue;
    }
    ASSERT_NE(it, change.end()) << n.name;
    EXPECT_FALSE(it->second.inclusive);
    EXPECT_DOUBLE_EQ(it->second.a_ms, self_ms(st.a, it->second.module)) << n.name;
    EXPECT_DOUBLE_EQ(it->second.b_ms, self_ms(st.b, it->second.module)) << n.name;
    if (n.module == "qkv") {
      ++qkv;
      EXPECT_EQ(it->second.module, "qkv");
      EXPECT_GT(it->second.a_ms, 0);
      EXPECT_GT(it->second.b_ms, 0);
    }
  }
  EXPECT_GT(qkv, 0);
  EXPECT_GT(scalars, 0);
}

TEST(BoxTimeChange, CollapsedModulesTakeTheirInclusiveTime) {
  const auto c = test::block_comparison();
  const auto& st = c->diff->structure;
  const GraphModel g = captured_graph(*test::profiled_block());
  const auto change = box_time_change(g, {"ff1", "qkv"}, st);
  for (const char* m : {"ff1", "qkv"}) {
    auto it = change.find(std::string("module:") + m);
    ASSERT_NE(it, change.end()) << m;
    EXPECT_TRUE(it->second.inclusive);
    bool found = false;
    for (const auto& l : st.modules)
      if (l.key == m) {
        found = true;
        EXPECT_DOUBLE_EQ(it->second.a_ms, l.a_ms);
        EXPECT_DOUBLE_EQ(it->second.b_ms, l.b_ms);
      }
    EXPECT_TRUE(found) << m;
  }
  EXPECT_TRUE(box_time_change(g, {}, report::StructureDiff{}).empty());  // no kernel time on either side
}

TEST(GraphPanel, ComparingColoursByTimeDifferenceWithALegend) {
  test::PanelOn<GraphPanel> shown(1000, 700, test::profiled_block());
  auto& [ctx, panel] = shown;
  panel.waitForLayout();
  EXPECT_FALSE(panel.legendText().contains("B 2x slower"));
  ctx.setComparison(test::block_comparison());
  EXPECT_TRUE(panel.legendText().contains("B 2x faster")) << panel.legendText().toStdString();
  EXPECT_TRUE(panel.legendText().contains("kernel time of each node's module")) << panel.legendText().toStdString();
  std::string qkv_node;
  for (const auto& n : panel.model().nodes)
    if (n.module == "qkv" && n.tensor && n.op == "call_function") qkv_node = n.name;
  ASSERT_FALSE(qkv_node.empty());
  EXPECT_TRUE(panel.detailText(qkv_node).startsWith("qkv ")) << panel.detailText(qkv_node).toStdString();
  EXPECT_TRUE(panel.detailText(qkv_node).contains(" → ")) << panel.detailText(qkv_node).toStdString();
  ctx.setComparison(nullptr);
  EXPECT_FALSE(panel.legendText().contains("B 2x faster"));
  EXPECT_FALSE(panel.detailText(qkv_node).contains(" → "));
}
