// partition_graph: before (the frozen TorchScript graph) / after (regions, steps and breaks) as text.
#include "engine/capture/partition.h"

#include <gtest/gtest.h>

#include "engine/model/model_impl.h"
#include "tests/support/paths.h"

using namespace kiln;

namespace {

capture::Partition partition(const char* name, capture::PartitionOptions o = {}) {
  auto m = model::load_model(test::example(name));
  capture::SourceFiles sources({test::example("src")});
  // Keep the model alive with the partition: nodes point into its graph.
  static std::vector<model::Model> keep;
  keep.push_back(m);
  return capture::partition_graph(*m.impl->graph, sources, o);
}

}  // namespace

TEST(Partition, GoldenAfterText) {
  for (const char* name : {"small_mlp.pt", "small_mlp_traced.pt", "gate.pt", "breaky.pt", "block.pt",
                           "tiny_resnet.pt", "shape_branch.pt"}) {
    auto text = capture::partition_text(partition(name));
    auto diff = test::check_golden(std::string("partition/") + name + ".txt", text);
    EXPECT_TRUE(diff.empty()) << diff << "\n" << text;
  }
}

TEST(Partition, BreakyHasThreeBreaksAtTheRightLines) {
  auto p = partition("breaky.pt");
  ASSERT_EQ(p.breaks.size(), 3u);
  EXPECT_EQ(p.breaks[0].category, capture::BreakCategory::SideEffect);
  EXPECT_EQ(p.breaks[0].loc.line, 42);
  EXPECT_EQ(p.breaks[0].loc.text, "print(\"mid\")");
  EXPECT_EQ(p.breaks[1].category, capture::BreakCategory::DataDependentBranch);
  EXPECT_EQ(p.breaks[1].loc.line, 43);
  EXPECT_EQ(p.breaks[2].category, capture::BreakCategory::ScalarExtraction);
  EXPECT_EQ(p.breaks[2].loc.line, 47);
  EXPECT_EQ(p.breaks[2].id, "KB003");
  EXPECT_FALSE(p.breaks[2].hint.empty());
  // Each break ends one region and resumes in a later one.
  EXPECT_EQ(p.breaks[0].ends_region, 0);
  EXPECT_EQ(p.breaks[0].resumes_region, 1);
  EXPECT_LT(p.breaks[2].ends_region, p.breaks[2].resumes_region);
}

TEST(Partition, GateBreaksOnlyOnTheDataDependentBranch) {
  auto p = partition("gate.pt");
  ASSERT_EQ(p.breaks.size(), 1u);
  EXPECT_EQ(p.breaks[0].category, capture::BreakCategory::DataDependentBranch);
  EXPECT_EQ(p.breaks[0].loc.line, 24);
  // The range(3) loop after the branch is captured, not broken on.
  auto text = capture::partition_text(p);
  EXPECT_EQ(text.find("KB005"), std::string::npos);
  EXPECT_EQ(text.find("KB006"), std::string::npos);
}

TEST(Partition, BreakFreeModelsAreOneRegion) {
  for (const char* name : {"small_mlp.pt", "small_mlp_traced.pt", "block.pt", "tiny_resnet.pt", "shape_branch.pt"}) {
    auto p = partition(name);
    EXPECT_EQ(p.breaks.size(), 0u) << name;
    EXPECT_EQ(p.regions.size(), 1u) << name;
    ASSERT_EQ(p.main.steps.size(), 1u) << name;
    EXPECT_EQ(p.regions[0].inputs.size(), 1u) << name;  // x only: weights are constants
    EXPECT_EQ(p.regions[0].outputs.size(), 1u) << name;
  }
}

TEST(Partition, ShapeBranchIsCapturedNotBroken) {
  auto p = partition("shape_branch.pt");
  EXPECT_NE(capture::partition_text(p).find("prim::If"), std::string::npos);
  EXPECT_TRUE(p.breaks.empty());
}
