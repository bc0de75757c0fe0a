// Two sessions on one time axis (pack_comparison) and the timeline panel while comparing.
#include <gtest/gtest.h>

#include "tests/viewers/app/session_fixtures.h"
#include "tests/viewers/app/view_fixtures.h"
#include "viewers/timeline/timeline_lanes.h"
#include "viewers/timeline/timeline_panel.h"

using namespace kiln;
using namespace kiln::viewers;

TEST(PackComparison, BsBlocksFollowAsWithTheirOwnNamesAndSources) {
  const auto& a = *test::profiled_block();
  const auto& b = *test::profiled_block_batch4();
  const TimelineData one = pack_timeline(a), other = pack_timeline(b);
  const TimelineData d = pack_comparison(a, b, "a.kiln", "b.kiln");
  ASSERT_EQ(d.blocks.size(), one.blocks.size() + other.blocks.size());
  for (size_t i = 0; i < d.blocks.size(); ++i) {
    const bool is_b = i >= one.blocks.size();
    const auto& block = d.blocks[i];
    const auto& own = is_b ? other.blocks[i - one.blocks.size()] : one.blocks[i];
    EXPECT_EQ(block.side, is_b ? 1 : 0);
    EXPECT_EQ(block.title, (is_b ? "B b.kiln · " : "A a.kiln · ") + own.title);
    ASSERT_EQ(block.lanes.size(), own.lanes.size());
    const auto& s = is_b ? b : a;
    for (const auto& lane : block.lanes)
      for (const auto& e : lane.events) {
        ASSERT_GE(e.source, 0);
        const auto& ev = s.timeline[size_t(e.source)];
        ASSERT_EQ(d.names[size_t(e.name)], ev.name);
        ASSERT_EQ(d.names[size_t(e.category)], ev.category);
        if (!ev.kernel.empty()) ASSERT_EQ(d.names[size_t(e.kernel)], ev.kernel);
      }
  }
  EXPECT_EQ(d.start, std::min(one.start, other.start));
  EXPECT_EQ(d.end, std::max(one.end, other.end));
  // Batch 4 takes longer than batch 2 is not asserted (timing); B's span is its own.
  EXPECT_EQ(pack_comparison(a, session::Session{}).blocks.size(), one.blocks.size());
}

TEST(TimelinePanel, StacksTheComparedSessionUnderTheShownOne) {
  test::PanelOn<TimelinePanel> shown(1000, 600, test::profiled_block());
  auto& [ctx, panel] = shown;
  const size_t alone = panel.canvas()->data().blocks.size();
  ASSERT_GT(alone, 0u);
  ctx.setComparison(test::block_comparison());
  const auto& d = panel.canvas()->data();
  ASSERT_EQ(d.blocks.size(), alone + pack_timeline(*test::profiled_block_batch4()).blocks.size());
  EXPECT_EQ(d.blocks.front().side, 0);
  EXPECT_EQ(d.blocks.back().side, 1);
  EXPECT_EQ(d.blocks.back().title.rfind("B block_batch4.kiln · ", 0), 0u) << d.blocks.back().title;
  ctx.setComparison(nullptr);
  EXPECT_EQ(panel.canvas()->data().blocks.size(), alone);
}
