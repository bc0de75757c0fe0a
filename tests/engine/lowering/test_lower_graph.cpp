// Lowering, before (the captured region graph) / after (loop IR) as golden text per example model.
#include "engine/lowering/lower_graph.h"

#include <gtest/gtest.h>

#include "engine/commands/compile_model.h"
#include "engine/model/model_impl.h"

#include "tests/support/compile_support.h"
#include "tests/support/scripted_models.h"

using namespace kiln;

namespace {
const std::vector<std::pair<const char*, const char*>> kModels = {
    {"small_mlp.pt", "4x64"}, {"block.pt", "2x16x64"}, {"tiny_resnet.pt", "2x3x16x16"}, {"shape_branch.pt", "8x16"}};
}

TEST(LowerGraph, BeforeAfterGoldens) {
  for (auto [name, input] : kModels) {
    auto cm = test::compile_example(name, input);
    ASSERT_TRUE(cm.stages.count("10_lowered.txt")) << name << ": " << cm.artifacts.note;
    std::string text = "# before\n" + cm.stages["00_captured.txt"] + "\n# after\n" + cm.stages["10_lowered.txt"];
    auto diff = test::check_golden(std::string("lowering/") + name + ".txt", text);
    EXPECT_TRUE(diff.empty()) << diff;
  }
}

TEST(LowerGraph, SoftmaxIsMaxThenSumThenPointwise) {
  auto cm = test::compile_example("block.pt", "2x16x64");
  const auto& t = cm.stages["10_lowered.txt"];
  EXPECT_NE(t.find("att_max = reduction [2, 4, 16] := max over [16]"), std::string::npos) << t;
  EXPECT_NE(t.find("att_sum = reduction [2, 4, 16] := sum over [16] of exp(sub("), std::string::npos) << t;
  EXPECT_NE(t.find("layer_norm_sum = reduction [2, 16] := sum over [64]"), std::string::npos) << t;
}

TEST(LowerGraph, GemmAndConvAreExternsAndUnknownOpsFallBack) {
  auto cm = test::compile_example("tiny_resnet.pt", "1x3x8x8");
  EXPECT_EQ(cm.artifacts.externs.size(), 4u);  // 3 conv2d + linear
  EXPECT_TRUE(cm.artifacts.fallbacks.empty());
  for (const auto& e : cm.artifacts.externs)
    EXPECT_TRUE(e.rfind("aten::conv2d", 0) == 0 || e.rfind("aten::linear", 0) == 0) << e;
}

TEST(LowerGraph, EveryOpOfTheExamplesHasALowering) {
  for (auto [name, input] : kModels) {
    auto cm = test::compile_example(name, input);
    EXPECT_TRUE(cm.artifacts.fallbacks.empty()) << name;
    EXPECT_TRUE(cm.artifacts.note.empty()) << name << ": " << cm.artifacts.note;
  }
}

// The pieces of split, chunk and unbind come out as a list (no tensor output names them): a piece an extern
// reads whole is stored in its source's dtype, not float32 (a bfloat16 piece stored as float32 reached
// matmul beside a bfloat16 operand).
TEST(LowerGraph, PiecesOfASplitKeepTheirSourcesDtype) {
  const auto path = test::scripted_model("split_pieces", R"(
def forward(self, x):
    a, b = x.split(8, -1)
    c, d = torch.chunk(x * 2.0, 2, 0)
    e = torch.unbind(x + 1.0, 0)[1]
    return torch.matmul(a, b.t()), torch.matmul(c, d.t()), e
)");
  for (const char* dtype : {"float32", "bfloat16"}) {
    capture::CompileOptions o;
    o.backend = "kiln";
    o.dynamic = false;
    auto r = runtime::compile_model(model::load_model(path), {parse_input_spec(std::string("16x16:") + dtype)}, o, "", 2);
    EXPECT_TRUE(r.mismatch.empty()) << dtype << ": " << r.mismatch;
    EXPECT_TRUE(r.within_tolerance) << dtype << ": max rel " << r.max_rel_error;
  }
}
