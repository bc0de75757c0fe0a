// Timeline geometry, packing, level of detail and selection linking.
#include <QSignalSpy>
#include <QTest>
#include <gtest/gtest.h>

#include "viewers/timeline/timeline_panel.h"

using namespace kiln;
using namespace kiln::viewers;

TEST(TimelineGeometry, TimeAndPixelRoundTrip) {
  TimelineGeometry g;
  g.fit(1000, 101000, 1000);  // 100 ns per pixel
  EXPECT_DOUBLE_EQ(g.ns_per_px, 100);
  EXPECT_DOUBLE_EQ(g.x_of(1000), 0);
  EXPECT_DOUBLE_EQ(g.x_of(51000), 500);
  for (double x : {0.0, 17.5, 999.0}) EXPECT_NEAR(g.x_of(g.t_of(x)), x, 1e-9);
}

TEST(TimelineGeometry, ZoomKeepsTheTimeUnderTheCursor) {
  TimelineGeometry g;
  g.fit(0, 1e6, 800);
  double t = g.t_of(300);
  g.zoom_at(300, 4);
  EXPECT_NEAR(g.t_of(300), t, 1e-6);
  EXPECT_NEAR(g.ns_per_px, 1e6 / 800 / 4, 1e-9);
  g.zoom_at(300, 1e12);  // cannot zoom past the minimum
  EXPECT_DOUBLE_EQ(g.ns_per_px, g.min_ns_per_px);
  EXPECT_NEAR(g.t_of(300), t, 1e-6);
}

TEST(TimelineGeometry, PanAndClamp) {
  TimelineGeometry g;
  g.fit(0, 1000, 100);  // 10 ns/px
  g.pan_px(-50);
  EXPECT_DOUBLE_EQ(g.t0, 500);
  g.pan_px(-10000);
  g.clamp(0, 1000, 100);
  EXPECT_LE(g.t0, 1000 - 1000 * 9 / 10.0);
  g.pan_px(10000);
  g.clamp(0, 1000, 100);
  EXPECT_DOUBLE_EQ(g.t0, -100);  // a tenth of the window before the start
}

namespace {

TimelineLane lane_of(std::vector<std::pair<int64_t, int64_t>> spans) {
  TimelineLane l;
  for (auto [s, d] : spans) {
    l.events.push_back({s, d, 0, 0, -1});
    l.max_dur = std::max(l.max_dur, d);
  }
  return l;
}

std::shared_ptr<session::Session> two_run_session() {
  auto s = std::make_shared<session::Session>();
  session::Run a, b;
  a.id = 0;
  a.mode = "eager";
  a.backend = "eager";
  b.id = 1;
  b.mode = "default";
  b.backend = "kiln";
  s->runs = {a, b};
  session::Kernel k;
  k.name = "k0_fused_add_relu";
  k.compile_id = "[0/0]";
  k.nodes = {"add", "relu"};
  s->kernels = {k};
  session::CompiledRegion r0, r1;
  r0.compile_id = "[1/0]";  // another region first: selecting the kernel must switch to [0/0]
  r1.compile_id = "[0/0]";
  s->regions = {r0, r1};
  auto ev = [](int run, const char* lane, const char* name, const char* cat, int64_t start, int64_t dur,
               const char* kernel = "") {
    session::TimelineEvent e;
    e.run = run;
    e.lane = lane;
    e.name = name;
    e.category = cat;
    e.start_ns = start;
    e.dur_ns = dur;
    e.kernel = kernel;
    e.compile_id = *kernel ? "[0/0]" : "";
    return e;
  };
  s->timeline = {ev(0, "aten ops", "aten::add", "cpu_op", 5000, 2000), ev(0, "aten ops", "aten::relu", "cpu_op", 8000, 1000),
                 ev(1, "host:1", "region 0", "region", 1000000, 50000),
                 ev(1, "host:1", "k0_fused_add_relu", "kernel", 1010000, 30000, "k0_fused_add_relu")};
  return s;
}

}  // namespace

TEST(TimelineLanes, NarrowNeighboursFoldAndWideEventsStay) {
  // 100 events of 1 ns every 10 ns, then one wide event.
  std::vector<std::pair<int64_t, int64_t>> spans;
  for (int i = 0; i < 100; ++i) spans.push_back({i * 10, 1});
  spans.push_back({2000, 5000});
  auto lane = lane_of(spans);
  TimelineGeometry g;
  g.fit(0, 8000, 800);  // 10 ns per pixel: each small event is 0.1 px, 1 px apart
  auto items = visible_items(lane, g, 800);
  int folded = 0, total = 0;
  for (const auto& it : items) {
    total += it.count;
    folded += it.count > 1;
    if (it.count > 1) EXPECT_LE(it.x1 - it.x0, kFoldPx * 4 + 1);  // folds stay narrow
  }
  EXPECT_EQ(total, 101);  // every event is accounted for, once
  EXPECT_GT(folded, 0);
  EXPECT_LT(items.size(), 40u);
  EXPECT_EQ(items.back().count, 1);  // the wide event is drawn by itself
  EXPECT_NEAR(items.back().x1 - items.back().x0, 500, 1e-9);
  // Zoomed in on the small events they are drawn one by one.
  g.fit(0, 100, 1000);
  items = visible_items(lane, g, 1000);
  for (const auto& it : items) EXPECT_EQ(it.count, 1);
  EXPECT_EQ(items.size(), 11u);  // events at 0..100 ns (the one at 100 touches the edge)
}

TEST(TimelineLanes, BinarySearchFindsLongEventsThatStartedBeforeTheWindow) {
  auto lane = lane_of({{0, 1000000}, {500000, 10}, {900000, 10}});
  TimelineGeometry g;
  g.fit(600000, 700000, 100);
  auto items = visible_items(lane, g, 100);
  ASSERT_EQ(items.size(), 1u);  // only the long one overlaps the window
  EXPECT_EQ(items[0].first, 0);
}

TEST(TimelineLanes, OneBlockPerRunAlignedAtItsFirstEvent) {
  auto s = two_run_session();
  auto d = pack_timeline(*s);
  ASSERT_EQ(d.blocks.size(), 2u);
  EXPECT_EQ(d.blocks[0].title, "eager · eager");
  EXPECT_EQ(d.blocks[1].title, "default · kiln");
  EXPECT_EQ(d.blocks[1].lanes.at(0).events.at(0).start, 0);  // 1 000 000 ns on its own clock
  EXPECT_EQ(d.blocks[1].lanes.at(0).events.at(1).start, 10000);
  EXPECT_EQ(d.blocks[0].lanes.at(0).events.at(1).start, 3000);
}

TEST(TimelinePanel, ClickingAKernelEventSelectsKernelAndRun) {
  SelectionContext ctx;
  TimelinePanel panel(&ctx);
  panel.resize(1000, 400);
  panel.show();
  ctx.setSession(two_run_session());
  ctx.setRun(0);
  auto* canvas = panel.canvas();
  QTest::qWait(10);
  // The kernel event: block 1 (default · kiln), lane host:1, second event.
  QPoint at = canvas->pointOf(1, 0, 1);
  auto hit = canvas->hitAt(at);
  ASSERT_EQ(hit.block, 1);
  ASSERT_EQ(hit.event, 1);
  QTest::mouseClick(canvas, Qt::LeftButton, {}, at);
  EXPECT_EQ(ctx.current().kernel, "k0_fused_add_relu");
  EXPECT_EQ(ctx.current().run, 1);
  EXPECT_EQ(ctx.current().compile_id, "[0/0]");
}

TEST(TimelinePanel, AKernelSelectedElsewhereIsScrolledIntoView) {
  SelectionContext ctx;
  TimelinePanel panel(&ctx);
  panel.resize(1000, 400);
  panel.show();
  ctx.setSession(two_run_session());
  auto* canvas = panel.canvas();
  canvas->geometry().zoom_at(0, 1000);  // far zoomed in at the start: the kernel is off screen
  double before = canvas->geometry().t0;
  ctx.setRun(1);
  ctx.selectKernel("k0_fused_add_relu", "[0/0]");
  double area = canvas->width() - TimelineCanvas::kLabelWidth;
  double x = canvas->geometry().x_of(10000 + 15000);
  EXPECT_NE(canvas->geometry().t0, before);
  EXPECT_GE(x, 0);
  EXPECT_LE(x, area);
}
