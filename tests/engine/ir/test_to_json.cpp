#include "engine/ir/to_json.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/engine/ir/sample_graph.h"
#include "tests/support/paths.h"

using namespace kiln;

TEST(ToJson, Golden) {
  auto text = ir::to_json(test::sample_graph());
  auto diff = test::check_golden("ir/sample_graph.json", text + "\n");
  EXPECT_TRUE(diff.empty()) << diff;
}

TEST(ToJson, ParsesAndCarriesMeta) {
  auto j = nlohmann::json::parse(ir::to_json(test::sample_graph()));
  ASSERT_EQ(j["nodes"].size(), 6u);
  const auto& lin = j["nodes"][2];
  EXPECT_EQ(lin["target"], "aten::linear");
  EXPECT_EQ(lin["module"], "l1");
  EXPECT_EQ(lin["source"]["line"], 41);
  EXPECT_EQ(lin["outputs"][0]["meta"]["shape"][0], "s0");
  EXPECT_EQ(lin["outputs"][0]["meta"]["shape"][1], 64);
  EXPECT_EQ(j["nodes"][4]["args"][0]["str"], "say \"hi\"\n */ \\");
}
