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

// What one node of a target must show; the fields left null or 0 are not checked.
struct NodeExpectation {
  size_t index;                     // among the nodes of the target, in graph order
  const char* module_path = nullptr;
  int line = 0;                     // its source line
  const char* type = nullptr;       // its first output's meta, as printed
  const char* text_part = nullptr;  // a part of its source line's text
};

// The graph has `count` nodes calling `target`, and the listed ones show what is expected.
void expect_nodes(const ir::Graph& g, const std::string& target, size_t count,
                  const std::vector<NodeExpectation>& expected) {
  auto nodes = nodes_with_target(g, target);
  ASSERT_EQ(nodes.size(), count) << target;
  for (const auto& e : expected) {
    const ir::Node& n = *nodes.at(e.index);
    SCOPED_TRACE(target + " #" + std::to_string(e.index));
    if (e.module_path) EXPECT_EQ(n.module_path, e.module_path);
    if (e.line) EXPECT_EQ(n.loc.line, e.line);
    if (e.type) EXPECT_EQ(n.outputs[0].meta.str(), e.type);
    if (e.text_part) EXPECT_NE(n.loc.text.find(e.text_part), std::string::npos) << n.loc.text;
  }
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
  expect_nodes(r.graph, "aten::softmax", 1, {{0, nullptr, 70, nullptr, "torch.softmax"}});
  expect_nodes(r.graph, "aten::layer_norm", 2, {{0, "ln1", 66, "f32[2, 16, 64]"}});
}

TEST(InspectModel, TinyResNetSourceLocationsAndModulePaths) {
  auto r = inspect("tiny_resnet.pt", "2x3x16x16");
  expect_nodes(r.graph, "aten::conv2d", 3, {{0, "stem", 88}, {1, "c1"}, {2, "c2", 90}});
  expect_nodes(r.graph, "aten::batch_norm", 3, {{1, "bn1"}});
  expect_nodes(r.graph, "aten::linear", 1, {{0, "head", 0, "f32[2, 10]"}});
}

TEST(InspectModel, TracedModelsFindTheUserLineInTheRecordedStack) {
  auto r = inspect("small_mlp_traced.pt", "4x64");
  expect_nodes(r.graph, "aten::linear", 2, {{0, "l1", 13, nullptr, "self.l2(torch.relu(self.l1(x)))"}});
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
