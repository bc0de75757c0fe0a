// Lost fusion across graph breaks: the two regions joined, put through Kiln's scheduler and measured
// against the program as it is (commands/lost_fusion.h).
#include <gtest/gtest.h>

#include "engine/commands/lost_fusion.h"
#include "engine/model/model.h"
#include "tests/support/paths.h"
#include "tests/support/weighted_breaks.h"

using namespace kiln;

namespace {

const runtime::LostFusion* site(const std::vector<runtime::LostFusion>& lost, const std::string& id) {
  for (const auto& l : lost)
    if (l.info.id == id) return &l;
  return nullptr;
}

// "k0_mul [0/0]" -> 0: the region of a kernel key.
int region_of(const std::string& kernel_key) {
  auto open = kernel_key.find(" [");
  return std::stoi(kernel_key.substr(open + 2));
}

session::BreakCost cost(const std::string& id, int line, double gap_ms) {
  session::BreakCost c;
  c.run = 1;
  c.break_id = id;
  c.reason = id + " reason";
  c.file = "m.py";
  c.line = line;
  c.gap_ms = gap_ms;
  c.guard_ms = 0.5;
  c.total_ms = gap_ms + 0.5;
  c.step_ms = 10;
  c.share = c.total_ms / 10;
  return c;
}

runtime::LostFusion lost(const std::string& id, int line) {
  runtime::LostFusion l;
  l.info.id = id;
  l.info.reason = id + " reason";
  l.info.loc.file = "m.py";
  l.info.loc.line = line;
  return l;
}

}  // namespace

// Before: relu(x) * 2.0 ends region 0 in one pointwise kernel, y + 1.0 starts region 1 in another.
// Joined (the print dropped), the scheduler computes both in one kernel of one region; the kernels
// on both sides were timed on the same inputs.
TEST(LostFusion, APointwiseChainFusesAcrossAPrint) {
  auto m = model::load_model(test::weighted_breaks_model());
  auto lost = runtime::measure_lost_fusion(m, {{parse_input_spec("64x512")}}, {}, 15, 1);
  ASSERT_EQ(lost.size(), 3u);
  const auto* print = site(lost, "KB001");
  ASSERT_NE(print, nullptr);
  ASSERT_TRUE(print->measured) << print->unmeasured;
  EXPECT_TRUE(print->unmeasured.empty());
  ASSERT_EQ(print->fused.size(), 1u) << print->text();
  const auto& f = print->fused[0];
  // The separate kernels come from the two regions the break separates; the fused one from one region.
  ASSERT_EQ(f.before.size(), 2u) << print->text();
  std::set<int> regions;
  for (const auto& k : f.before) regions.insert(region_of(k));
  EXPECT_EQ(regions, (std::set<int>{print->info.ends_region, print->info.resumes_region}));
  EXPECT_NE(print->text().find(" -> " + f.fused), std::string::npos);
  for (const auto& k : f.before)
    EXPECT_NE(std::find(print->compared_before.begin(), print->compared_before.end(), k), print->compared_before.end());
  EXPECT_NE(std::find(print->compared_after.begin(), print->compared_after.end(), f.fused), print->compared_after.end());
  // Two kernels and two passes over the tensor against one: both measured, the difference is what the
  // break costs. Which is faster is not asserted: a timing on a loaded machine (tests run in parallel)
  // can come out either way; bench/ measures speed.
  EXPECT_GT(print->before_ms, 0);
  EXPECT_GT(print->after_ms, 0);
  EXPECT_DOUBLE_EQ(print->lost_ms, print->before_ms - print->after_ms);
  // The loop's trip count reads tensor data: its regions cannot be joined, and it says why.
  const auto* loop = site(lost, "KB005");
  ASSERT_NE(loop, nullptr);
  EXPECT_FALSE(loop->measured);
  EXPECT_NE(loop->unmeasured.find("cannot be joined"), std::string::npos) << loop->unmeasured;
  EXPECT_TRUE(loop->fused.empty());
  EXPECT_EQ(loop->lost_ms, 0);
  // The scalar read kept as a 0-d tensor joins its regions: measured, whatever fuses.
  const auto* scalar = site(lost, "KB003");
  ASSERT_NE(scalar, nullptr);
  EXPECT_TRUE(scalar->measured) << scalar->unmeasured;
}

// Breaky's if on bool(y.sum() > 0) is data-dependent control flow: not measured, with the reason;
// its print and item() breaks are joined and checked.
TEST(LostFusion, ADataDependentBranchIsNotMeasured) {
  auto m = model::load_model(test::example("breaky.pt"));
  auto lost = runtime::measure_lost_fusion(m, {{parse_input_spec("4x64")}}, {}, 3, 1);
  ASSERT_EQ(lost.size(), 3u);
  const auto* branch = site(lost, "KB002");
  ASSERT_NE(branch, nullptr);
  EXPECT_FALSE(branch->measured);
  EXPECT_NE(branch->unmeasured.find("data-dependent control flow"), std::string::npos) << branch->unmeasured;
  EXPECT_EQ(branch->text(), "");
  for (const char* id : {"KB001", "KB003"}) {
    const auto* l = site(lost, id);
    ASSERT_NE(l, nullptr);
    EXPECT_TRUE(l->measured) << id << ": " << l->unmeasured;
    // Whatever the scheduler fused, each fused kernel names the kernels it replaced.
    for (const auto& f : l->fused) EXPECT_FALSE(f.before.empty());
  }
}

TEST(LostFusion, AMeasuredLossJoinsTheTotalAndTheRanking) {
  std::vector<session::BreakCost> costs = {cost("KB005", 20, 4.0), cost("KB001", 10, 1.0), cost("KB003", 30, 0.2)};
  auto print = lost("KB001", 10);
  print.measured = true;
  print.fused = {{"k0_add [0/0]", {"k0_mul [0/0]", "k0_add [1/0]"}}};
  print.lost_ms = 4.0;
  auto loop = lost("KB005", 20);
  loop.unmeasured = "the regions cannot be joined: a loop";
  auto scalar = lost("KB003", 30);
  scalar.measured = true;  // nothing fuses across it
  runtime::apply_lost_fusion(costs, {print, loop, scalar});
  ASSERT_EQ(costs.size(), 3u);
  // The print's 1.5 ms of gap and guards and 4 ms of lost fusion now outrank the loop's 4.5 ms.
  EXPECT_EQ(costs[0].break_id, "KB001");
  EXPECT_TRUE(costs[0].lost_fusion_checked);
  EXPECT_DOUBLE_EQ(costs[0].lost_fusion_ms, 4.0);
  EXPECT_DOUBLE_EQ(costs[0].total_ms, 5.5);
  EXPECT_DOUBLE_EQ(costs[0].share, 0.55);
  EXPECT_EQ(costs[0].lost_fusion, "k0_mul [0/0] + k0_add [1/0] -> k0_add [0/0]");
  EXPECT_EQ(costs[1].break_id, "KB005");
  EXPECT_DOUBLE_EQ(costs[1].total_ms, 4.5);
  EXPECT_EQ(costs[1].lost_fusion_unmeasured, "the regions cannot be joined: a loop");
  EXPECT_EQ(costs[1].lost_fusion_ms, 0);
  EXPECT_EQ(costs[2].break_id, "KB003");
  EXPECT_TRUE(costs[2].lost_fusion_checked);
  EXPECT_TRUE(costs[2].lost_fusion.empty());
  EXPECT_TRUE(costs[2].lost_fusion_unmeasured.empty());
}
