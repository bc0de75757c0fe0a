// plan_break_removals / remove_breaks: each rewrite before and after (the graph's ops as text, and the
// breaks partition_graph finds), and each refusal with its reason.
#include "engine/capture/what_if.h"

#include <gtest/gtest.h>

#include "engine/base/error.h"
#include "engine/model/model_impl.h"
#include "tests/support/paths.h"
#include "tests/support/scripted_models.h"
#include "tests/support/weighted_breaks.h"

using namespace kiln;
using capture::BreakRemoval;

namespace {

// The graph's ops in order, one a line, nested blocks indented; constants left out.
void ops_text(const torch::jit::Block* b, const std::string& indent, std::string& out) {
  for (const auto* n : b->nodes()) {
    if (n->kind() == c10::prim::Constant) continue;
    out += indent + n->kind().toQualString() + "\n";
    for (size_t k = 0; k < n->blocks().size(); ++k) {
      out += indent + "  block" + std::to_string(k) + ":\n";
      ops_text(n->blocks()[k], indent + "    ", out);
    }
  }
}

std::string ops_text(const torch::jit::Graph& g) {
  std::string out;
  ops_text(g.block(), "", out);
  return out;
}

struct Case {
  model::Model model;
  capture::SourceFiles sources;
  capture::Partition partition;
  capture::WhatIfExamples examples;

  explicit Case(const std::string& path, std::vector<int64_t> shape = {4, 8})
      : model(model::load_model(path)), partition(capture::partition_graph(*model.impl->graph, sources)) {
    examples.self = model.impl->frozen._ivalue();
    examples.calls.push_back({torch::randn(shape)});
  }
  const torch::jit::Graph& graph() const { return *model.impl->graph; }
  std::vector<BreakRemoval> plan() const { return capture::plan_break_removals(graph(), partition, examples); }
  std::shared_ptr<torch::jit::Graph> remove(std::vector<int> breaks) {
    return capture::remove_breaks(graph(), sources, breaks, examples);
  }
  size_t breaks_after(const torch::jit::Graph& g) {
    capture::SourceFiles s;
    return capture::partition_graph(g, s).breaks.size();
  }
};

// Runs a graph (self first) as TorchScript would.
c10::IValue run_graph(const Case& c, const std::shared_ptr<torch::jit::Graph>& g, const at::Tensor& x) {
  torch::jit::GraphFunction fn("what_if", g, nullptr);
  std::vector<c10::IValue> stack{c.model.impl->frozen._ivalue(), x};
  fn.run(stack);
  return stack.front();
}

}  // namespace

TEST(WhatIfRewrite, DropsAPrint) {
  Case c(test::scripted_model("wi_print", R"JIT(
def forward(self, x):
    y = torch.relu(x)
    print("hello")
    return y * 2.0
)JIT"));
  ASSERT_EQ(c.partition.breaks.size(), 1u);
  auto plan = c.plan();
  ASSERT_EQ(plan[0].kind, BreakRemoval::Kind::DropPrint);
  EXPECT_NE(plan[0].change.find("no longer prints"), std::string::npos);
  EXPECT_EQ(ops_text(c.graph()), "aten::relu\nprim::Print\naten::mul\n");
  auto g = c.remove({0});
  EXPECT_EQ(ops_text(*g), "aten::relu\naten::mul\n");
  EXPECT_EQ(c.breaks_after(*g), 0u);
  // The original graph is untouched.
  EXPECT_EQ(ops_text(c.graph()), "aten::relu\nprim::Print\naten::mul\n");
}

TEST(WhatIfRewrite, KeepsItemAsAZeroDimTensor) {
  Case c(test::scripted_model("wi_item", R"JIT(
def forward(self, x):
    s = x.mean().item()
    return x * s
)JIT"));
  ASSERT_EQ(c.partition.breaks.size(), 1u);
  auto plan = c.plan();
  ASSERT_EQ(plan[0].kind, BreakRemoval::Kind::ScalarAsTensor) << plan[0].why_not;
  EXPECT_EQ(ops_text(c.graph()), "aten::mean\naten::item\naten::mul\n");
  auto g = c.remove({0});
  EXPECT_EQ(ops_text(*g), "aten::mean\naten::reshape\naten::clone\naten::mul\n");
  EXPECT_EQ(c.breaks_after(*g), 0u);
  at::Tensor x = torch::randn({4, 8});
  auto out = run_graph(c, g, x).toTensor();
  EXPECT_TRUE(torch::allclose(out, x * x.mean().item<double>()));
}

TEST(WhatIfRewrite, FloatThroughConversionsBecomesAFloat64Tensor) {
  // float(item()) as in breaky: the item's number passes through aten::Float before the multiply.
  Case c(test::scripted_model("wi_float", R"JIT(
def forward(self, x):
    s = float(x.mean().item())
    return x - s
)JIT"));
  auto plan = c.plan();
  ASSERT_EQ(plan.size(), 1u);
  ASSERT_EQ(plan[0].kind, BreakRemoval::Kind::ScalarAsTensor) << plan[0].why_not;
  auto g = c.remove({0});
  EXPECT_EQ(ops_text(*g), "aten::mean\naten::reshape\naten::clone\naten::to\naten::sub\n");
  at::Tensor x = torch::randn({4, 8});
  auto out = run_graph(c, g, x).toTensor();
  EXPECT_EQ(out.scalar_type(), at::kFloat);  // a float64 0-d tensor promotes like a Python float
  EXPECT_TRUE(torch::allclose(out, x - x.mean().item<double>()));
}

TEST(WhatIfRewrite, RefusesAScalarReadThatFeedsSizesOrNumberMath) {
  Case sizes(test::scripted_model("wi_int_size", R"JIT(
def forward(self, x):
    n = int(x.sum())
    return x.new_zeros([n])
)JIT"));
  auto p1 = sizes.plan();
  ASSERT_EQ(p1.size(), 1u);
  EXPECT_FALSE(p1[0].removable());
  EXPECT_NE(p1[0].why_not.find("prim::ListConstruct"), std::string::npos) << p1[0].why_not;
  EXPECT_NE(p1[0].why_not.find("no overload taking a tensor"), std::string::npos);
  EXPECT_THROW(sizes.remove({0}), Error);

  Case math(test::scripted_model("wi_float_math", R"JIT(
def forward(self, x):
    s = float(x.mean())
    return x * (s * 2.0)
)JIT"));
  auto p2 = math.plan();
  ASSERT_EQ(p2.size(), 1u);
  EXPECT_FALSE(p2[0].removable());
  EXPECT_NE(p2[0].why_not.find("aten::mul(float, float)"), std::string::npos) << p2[0].why_not;

  Case returned(test::scripted_model("wi_float_ret", R"JIT(
def forward(self, x):
    return float(x.mean())
)JIT"));
  auto p3 = returned.plan();
  ASSERT_EQ(p3.size(), 1u);
  EXPECT_EQ(p3[0].why_not, "forward returns the value as a number");
}

TEST(WhatIfRewrite, TurnsADataDependentBranchIntoWhere) {
  Case c(test::scripted_model("wi_branch", R"JIT(
def forward(self, x):
    if bool(x.sum() > 0):
        y = x * 2.0
    else:
        y = x - 1.0
    return torch.relu(y)
)JIT"));
  ASSERT_EQ(c.partition.breaks.size(), 1u);
  auto plan = c.plan();
  ASSERT_EQ(plan[0].kind, BreakRemoval::Kind::BranchAsWhere) << plan[0].why_not;
  EXPECT_EQ(ops_text(c.graph()),
            "aten::sum\naten::gt\naten::Bool\nprim::If\n  block0:\n    aten::mul\n  block1:\n    aten::sub\n"
            "aten::relu\n");
  auto g = c.remove({0});
  EXPECT_EQ(ops_text(*g), "aten::sum\naten::gt\naten::reshape\naten::to\naten::mul\naten::sub\naten::where\naten::relu\n");
  EXPECT_EQ(c.breaks_after(*g), 0u);
  for (double sign : {1.0, -1.0}) {
    at::Tensor x = torch::rand({4, 8}) * sign;
    auto expected = torch::relu(sign > 0 ? x * 2.0 : x - 1.0);
    EXPECT_TRUE(torch::equal(run_graph(c, g, x).toTensor(), expected));
  }
}

TEST(WhatIfRewrite, NotConditionSwapsTheBranches) {
  Case c(test::scripted_model("wi_not", R"JIT(
def forward(self, x):
    if not bool(x.sum() > 0):
        y = x * 2.0
    else:
        y = x - 1.0
    return y
)JIT"));
  auto plan = c.plan();
  ASSERT_EQ(plan.size(), 1u);
  ASSERT_EQ(plan[0].kind, BreakRemoval::Kind::BranchAsWhere) << plan[0].why_not;
  auto g = c.remove({0});
  for (double sign : {1.0, -1.0}) {
    at::Tensor x = torch::rand({4, 8}) * sign;
    EXPECT_TRUE(torch::equal(run_graph(c, g, x).toTensor(), sign > 0 ? x - 1.0 : x * 2.0));
  }
}

TEST(WhatIfRewrite, RefusesBranchesThatAreNotPureOrNotShapeCompatible) {
  auto why = [](const char* name, const char* source) {
    Case c(test::scripted_model(name, source));
    auto plan = c.plan();
    for (size_t i = 0; i < plan.size(); ++i)
      if (c.partition.breaks[i].category == capture::BreakCategory::DataDependentBranch) {
        EXPECT_FALSE(plan[i].removable());
        return plan[i].why_not;
      }
    ADD_FAILURE() << name << ": no data-dependent branch";
    return std::string();
  };
  EXPECT_EQ(why("wi_shape2", R"JIT(
def forward(self, x):
    if bool(x.sum() > 0):
        y = x[0]
    else:
        y = x
    return y
)JIT"),
            "the branches give y different shapes ([8] and [4, 8])");
  EXPECT_NE(why("wi_inplace", R"JIT(
def forward(self, x):
    y = x.clone()
    if bool(x.sum() > 0):
        y.add_(1.0)
    return y * 2.0
)JIT").find("changes a tensor in place, aten::add_"),
            std::string::npos);
  EXPECT_NE(why("wi_raise", R"JIT(
def forward(self, x):
    assert bool(x.sum() < 1000.0), "too large"
    return x * 2.0
)JIT").find("the else-branch raises an exception"),
            std::string::npos);
  EXPECT_NE(why("wi_nested", R"JIT(
def forward(self, x):
    if bool(x.sum() > 0):
        print("positive")
        y = x * 2.0
    else:
        y = x
    return y
)JIT").find("a branch holds a graph break of its own (KB001"),
            std::string::npos);
  EXPECT_NE(why("wi_cond", R"JIT(
def forward(self, x):
    if x.sum().item() > 0:
        y = x * 2.0
    else:
        y = x
    return y
)JIT").find("the condition comes from aten::gt"),
            std::string::npos);
}

TEST(WhatIfRewrite, BreakyPlanAndAllThreeRemoved) {
  Case c(test::example("breaky.pt"), {4, 64});
  auto plan = c.plan();
  ASSERT_EQ(plan.size(), 3u);
  EXPECT_EQ(plan[0].kind, BreakRemoval::Kind::DropPrint);
  EXPECT_EQ(plan[1].kind, BreakRemoval::Kind::BranchAsWhere) << plan[1].why_not;
  EXPECT_EQ(plan[2].kind, BreakRemoval::Kind::ScalarAsTensor) << plan[2].why_not;
  for (int b = 0; b < 3; ++b) EXPECT_EQ(c.breaks_after(*c.remove({b})), 2u) << b;
  auto all = c.remove({0, 1, 2});
  EXPECT_EQ(c.breaks_after(*all), 0u);
  at::Tensor x = torch::randn({4, 64});
  torch::jit::Module m = c.model.impl->module;
  auto expected = m.forward({x}).toTensor();
  auto actual = run_graph(c, all, x).toTensor();
  EXPECT_TRUE(torch::allclose(actual, expected, 1e-4, 1e-5));
}

TEST(WhatIfRewrite, WeightedBreaksRefuseTheLoopThatReadsData) {
  Case c(test::weighted_breaks_model(), {16, 64});
  auto plan = c.plan();
  ASSERT_EQ(plan.size(), c.partition.breaks.size());
  int loops = 0;
  for (size_t i = 0; i < plan.size(); ++i) {
    const auto& b = c.partition.breaks[i];
    if (b.category == capture::BreakCategory::DataDependentLoop) {
      ++loops;
      EXPECT_FALSE(plan[i].removable());
      EXPECT_NE(plan[i].why_not.find("trip count depends on a tensor's value"), std::string::npos);
    }
    if (b.category == capture::BreakCategory::SideEffect) EXPECT_EQ(plan[i].kind, BreakRemoval::Kind::DropPrint);
    if (b.category == capture::BreakCategory::ScalarExtraction)
      EXPECT_EQ(plan[i].kind, BreakRemoval::Kind::ScalarAsTensor) << plan[i].why_not;
  }
  EXPECT_EQ(loops, 1);
}
