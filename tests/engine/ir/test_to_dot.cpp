#include "engine/ir/to_dot.h"

#include <gtest/gtest.h>

#include <fstream>

#include "tests/engine/ir/sample_graph.h"
#include "tests/support/paths.h"

using namespace kiln;

TEST(ToDot, Golden) {
  test::expect_golden("ir/sample_graph.dot", ir::to_dot(test::sample_graph()));
}

TEST(ToDot, ModulePathsBecomeNestedClusters) {
  auto g = test::sample_graph();
  g.nodes[2].module_path = "layer1.0.conv1";
  auto text = ir::to_dot(g);
  EXPECT_NE(text.find("label=\"layer1\""), std::string::npos);
  EXPECT_NE(text.find("label=\"layer1.0\""), std::string::npos);
  EXPECT_NE(text.find("label=\"layer1.0.conv1\""), std::string::npos);
}

TEST(ToDot, QuotesAreEscaped) {
  EXPECT_EQ(ir::dot_quote("a\"b\\c\nd"), "\"a\\\"b\\\\c\\nd\"");
}

TEST(ToDot, RendersWithGraphviz) {
  std::string dot = KILN_DOT_PROGRAM;
  if (dot.empty() || dot.find("NOTFOUND") != std::string::npos) GTEST_SKIP() << "Graphviz 'dot' not installed";
  auto g = test::sample_graph();
  g.nodes[2].module_path = "weird \"name\" {}";
  std::string dir = test::temp_dir();
  std::ofstream(dir + "/g.dot") << ir::to_dot(g);
  std::string out;
  int rc = test::run_command(dot + " -Tsvg " + dir + "/g.dot -o " + dir + "/g.svg", out);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(test::read_file(dir + "/g.svg").find("<svg"), std::string::npos);
}
