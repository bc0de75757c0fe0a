// The front half of the compiler as one ordered list of passes: each timed, dumped and verified by
// the driver, with stage names and dump files declared once (engine/pipeline).
#include "engine/pipeline/front_end.h"

#include <gtest/gtest.h>

#include "engine/pipeline/pipeline.h"
#include "engine/pipeline/stages.h"
#include "tests/support/compile_support.h"

using namespace kiln;

TEST(FrontEnd, PassesRunInOrderTimedAndDumped) {
  EXPECT_EQ(pipeline::front_end_passes(), (std::vector<std::string>{"lower", "layout", "schedule", "plan"}));
  auto cm = test::compile_example("block.pt", "2x16x64");
  std::vector<std::string> files;
  for (const auto& s : cm.artifacts.stages) files.push_back(s.file);
  EXPECT_EQ(files, (std::vector<std::string>{pipeline::kCaptured.dump_file, pipeline::kLowered.dump_file,
                                             pipeline::kLoopsBeforeFusion.dump_file,
                                             pipeline::kLoopsAfterFusion.dump_file,
                                             pipeline::kFusionDecisions.dump_file, pipeline::kMemoryPlan.dump_file,
                                             pipeline::kKernelsCpp.dump_file}));
  std::vector<std::string> timed;
  for (const auto& [name, ms] : cm.artifacts.stage_ms) {
    timed.push_back(name);
    EXPECT_GE(ms, 0.0) << name;
  }
  // The back end's passes follow in the same driver; the C++ target loads its library separately.
  EXPECT_EQ(pipeline::compiler_passes(),
            (std::vector<std::string>{"lower", "layout", "schedule", "plan", "emit", "compile"}));
  EXPECT_EQ(timed, (std::vector<std::string>{"lower", "layout", "schedule", "plan", "emit", "compile", "load"}));
  // Every kernel record is built by the driver: its function's text, its language, the target's launch note.
  ASSERT_FALSE(cm.artifacts.kernels.empty());
  for (const auto& k : cm.artifacts.kernels) {
    EXPECT_EQ(k.language, "cpp");
    EXPECT_NE(k.source.find(k.name), std::string::npos) << k.name;
    EXPECT_FALSE(k.launch_config.empty()) << k.name;
    EXPECT_FALSE(k.nodes.empty()) << k.name;
  }
}

TEST(FrontEnd, TheDriverRunsOnACapturedGraphAndVerifiesEachPass) {
  auto cm = test::compile_example("tiny_resnet.pt", "2x3x16x16");
  auto regions = cm.rt->regions();
  const auto& graph = regions.at(0).entries.at(0).graph;
  runtime::RegionArtifacts art;
  pipeline::FrontEndOptions o;
  o.channels_last = true;
  auto front = pipeline::run_front_end(graph, o, art);
  EXPECT_TRUE(lowering::verify(front.fused.program).empty());
  EXPECT_FALSE(front.fused.kernels.empty());
  ASSERT_EQ(art.stages.size(), 6u);
  // The layout pass ran: the loops before fusion store convolutions channels-last.
  EXPECT_NE(art.stages[2].text.find("channels-last"), std::string::npos) << art.stages[2].text.substr(0, 800);
  EXPECT_EQ(art.stages[1].text.find("channels-last"), std::string::npos) << "lowering alone chooses no layout";
  pipeline::FrontEndOptions unfused;
  unfused.fuse = false;
  runtime::RegionArtifacts art2;
  auto one_each = pipeline::run_front_end(graph, unfused, art2);
  EXPECT_GT(one_each.fused.kernels.size(), front.fused.kernels.size());
}

TEST(FrontEnd, StageNamesComeFromTheirDumpFiles) {
  EXPECT_EQ(pipeline::stage_of_dump(pipeline::kLoopsAfterFusion.dump_file), pipeline::kLoopsAfterFusion.name);
  EXPECT_EQ(pipeline::stage_of_dump(pipeline::kLowered.dump_file), pipeline::kLowered.name);
  EXPECT_EQ(pipeline::stage_of_dump(pipeline::kKernelsCuda.dump_file), "kernels");
}
