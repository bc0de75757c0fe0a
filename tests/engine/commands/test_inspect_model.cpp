#include "engine/commands/inspect_model.h"

#include <gtest/gtest.h>

#include "engine/base/error.h"
#include "engine/ir/print_text.h"
#include "engine/model/model.h"
#include "tests/support/paths.h"

using namespace kiln;

namespace {

capture::InspectResult inspect(const char* model, const char* input, uint64_t seed = 0) {
  return capture::inspect_model(model::load_model(test::example(model)), {parse_input_spec(input)}, seed);
}

std::vector<const ir::Node*> nodes_with_target(const ir::Graph& g, const std::string& target) {
  std::vector<const ir::Node*> out;
  for (const auto* n : g.call_nodes())
    if (n->target == target) out.push_back(n);
  return out;
}

}  // namespace

TEST(InspectModel, BreakyPrintAtItsSourceLineAndLinearModulePaths) {
  auto r = inspect("breaky.pt", "4x64");
  EXPECT_TRUE(ir::verify(r.graph).empty());
  auto prints = nodes_with_target(r.graph, "prim::Print");
  ASSERT_EQ(prints.size(), 1u);
  EXPECT_EQ(prints[0]->loc.line, 42);
  EXPECT_EQ(prints[0]->loc.text, "print(\"mid\")");
  EXPECT_NE(prints[0]->loc.file.find("sample_models.py"), std::string::npos);
  auto linears = nodes_with_target(r.graph, "aten::linear");
  ASSERT_EQ(linears.size(), 2u);
  EXPECT_EQ(linears[0]->module_path, "l1");
  EXPECT_EQ(linears[1]->module_path, "l2");
  // The user's line, not torch/nn/modules/linear.py.
  EXPECT_EQ(linears[0]->loc.line, 41);
  EXPECT_EQ(linears[1]->loc.line, 48);
  EXPECT_NE(linears[0]->op_loc.file.find("linear.py"), std::string::npos);
  EXPECT_EQ(r.printed, std::vector<std::string>{"mid"});
  EXPECT_EQ(r.op_histogram["aten::linear"], 2);
  EXPECT_EQ(r.parameter_count, 2 * (64 * 64 + 64));
}

TEST(InspectModel, ShapesComeFromTheRun) {
  auto r = inspect("small_mlp.pt", "8x64");
  auto linears = nodes_with_target(r.graph, "aten::linear");
  ASSERT_EQ(linears.size(), 2u);
  EXPECT_EQ(linears[0]->outputs[0].meta.str(), "f32[8, 128]");
  EXPECT_EQ(linears[0]->outputs[0].meta.stride, (std::vector<int64_t>{128, 1}));
  EXPECT_EQ(linears[0]->outputs[0].meta.device, "cpu");
  EXPECT_EQ(linears[1]->outputs[0].meta.str(), "f32[8, 64]");
}

TEST(InspectModel, BlockSourceLocationsAndModulePaths) {
  auto r = inspect("block.pt", "2x16x64");
  std::map<std::string, int> paths;
  for (const auto* n : r.graph.call_nodes()) ++paths[n->module_path];
  for (const char* p : {"ln1", "ln2", "qkv", "out", "ff1", "ff2"}) EXPECT_GT(paths[p], 0) << p;
  auto softmax = nodes_with_target(r.graph, "aten::softmax");
  ASSERT_EQ(softmax.size(), 1u);
  EXPECT_EQ(softmax[0]->loc.line, 70);
  EXPECT_NE(softmax[0]->loc.text.find("torch.softmax"), std::string::npos);
  auto ln = nodes_with_target(r.graph, "aten::layer_norm");
  ASSERT_EQ(ln.size(), 2u);
  EXPECT_EQ(ln[0]->module_path, "ln1");
  EXPECT_EQ(ln[0]->loc.line, 66);
  EXPECT_EQ(ln[0]->outputs[0].meta.str(), "f32[2, 16, 64]");
}

TEST(InspectModel, TinyResNetSourceLocationsAndModulePaths) {
  auto r = inspect("tiny_resnet.pt", "2x3x16x16");
  auto convs = nodes_with_target(r.graph, "aten::conv2d");
  ASSERT_EQ(convs.size(), 3u);
  EXPECT_EQ(convs[0]->module_path, "stem");
  EXPECT_EQ(convs[1]->module_path, "c1");
  EXPECT_EQ(convs[2]->module_path, "c2");
  EXPECT_EQ(convs[0]->loc.line, 88);
  EXPECT_EQ(convs[2]->loc.line, 90);
  auto bns = nodes_with_target(r.graph, "aten::batch_norm");
  ASSERT_EQ(bns.size(), 3u);
  EXPECT_EQ(bns[1]->module_path, "bn1");
  auto head = nodes_with_target(r.graph, "aten::linear");
  ASSERT_EQ(head.size(), 1u);
  EXPECT_EQ(head[0]->module_path, "head");
  EXPECT_EQ(head[0]->outputs[0].meta.str(), "f32[2, 10]");
}

TEST(InspectModel, TracedModelsFindTheUserLineInTheRecordedStack) {
  auto r = inspect("small_mlp_traced.pt", "4x64");
  auto linears = nodes_with_target(r.graph, "aten::linear");
  ASSERT_EQ(linears.size(), 2u);
  EXPECT_EQ(linears[0]->module_path, "l1");
  EXPECT_EQ(linears[0]->loc.line, 13);
  EXPECT_NE(linears[0]->loc.text.find("self.l2(torch.relu(self.l1(x)))"), std::string::npos) << linears[0]->loc.text;
}

TEST(InspectModel, ReadableGoldens) {
  for (auto [model, input] : std::vector<std::pair<const char*, const char*>>{
           {"small_mlp.pt", "4x64"}, {"breaky.pt", "4x64"}, {"gate.pt", "4x64"}, {"block.pt", "2x16x64"},
           {"tiny_resnet.pt", "2x3x16x16"}, {"shape_branch.pt", "8x16"}}) {
    auto text = ir::to_readable(inspect(model, input, /*seed=*/1234).graph);
    auto diff = test::check_golden(std::string("inspect/") + model + ".txt", text);
    EXPECT_TRUE(diff.empty()) << diff;
  }
}

TEST(InspectModel, WrongInputCountAndShape) {
  auto m = model::load_model(test::example("small_mlp.pt"));
  try {
    capture::inspect_model(m, {parse_input_spec("4x64"), parse_input_spec("4x64")});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("forward takes 1 input (x), 2 given"), std::string::npos) << e.what();
  }
  try {
    capture::inspect_model(m, {parse_input_spec("4x32")});
    FAIL();
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("small_mlp.pt: forward on inputs [4x32] failed at sample_models.py:13"), std::string::npos) << msg;
    EXPECT_NE(msg.find("aten::linear failed"), std::string::npos) << msg;
  }
}
