#include "engine/ir/print_text.h"

#include <gtest/gtest.h>

#include "tests/engine/ir/sample_graph.h"
#include "tests/support/paths.h"

using namespace kiln;

TEST(PrintText, ReadableGolden) {
  test::expect_golden("ir/sample_readable.txt", ir::to_readable(test::sample_graph()));
}

TEST(PrintText, TableGolden) {
  test::expect_golden("ir/sample_table.txt", ir::to_table(test::sample_graph()));
}

TEST(PrintText, SourceTextWithNewlinesStaysOnOneLine) {
  auto g = test::sample_graph();
  g.nodes[3].loc.text = "evil\n  %y : f32[1] = aten::fake()";
  auto text = ir::to_readable(g);
  EXPECT_EQ(text.find("\n  %y : f32[1] = aten::fake()"), std::string::npos) << text;
}
