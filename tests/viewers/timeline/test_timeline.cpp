// Timeline geometry, packing, level of detail and selection linking.
#include <QApplication>
#include <QImage>
#include <QPainter>
#include <QSignalSpy>
#include <QWheelEvent>
#include <QTest>
#include <gtest/gtest.h>

#include "tests/support/session_builders.h"
#include "tests/viewers/app/view_fixtures.h"
#include "viewers/timeline/timeline_panel.h"
#include "viewers/timeline/timeline_ruler.h"

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
  s->timeline = {test::timeline_event(0, "aten ops", "cpu_op", "aten::add", 5000, 2000),
                 test::timeline_event(0, "aten ops", "cpu_op", "aten::relu", 8000, 1000),
                 test::timeline_event(1, "host:1", "region", "region 0", 1000000, 50000),
                 test::kernel_event(1, "k0_fused_add_relu", "[0/0]", 1010000, 30000, "host:1")};
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

TEST(TimelineLanes, DenseLanesFoldIntoFewItemsAndCountEveryEvent) {
  // 200,000 events of 1 ns every 5 ns, a 40 ns event every 997 events.
  TimelineLane lane;
  for (int i = 0; i < 200000; ++i) {
    int64_t dur = i % 997 == 0 ? 4 : 1;
    lane.events.push_back({static_cast<int64_t>(i) * 5, dur, 0, 0, -1});
    lane.max_dur = std::max(lane.max_dur, dur);
  }
  lane.events[123456].kernel = 3;
  for (double width : {1000.0, 1600.0}) {
    TimelineGeometry g;
    g.fit(100000, 900000, width);  // 800 ns per pixel: the window holds 160,000 events
    auto items = visible_items(lane, g, width, EventMark{3, -1});
    int total = 0, marked = 0;
    for (const auto& it : items) {
      total += it.count;
      marked += it.marked;
      EXPECT_LE(it.x1 - it.x0, kFoldPx * 4 + 1);
      EXPECT_GE(it.x0, -1);
    }
    // Every event overlapping the window exactly once (the first one starts at 100,000 ns).
    EXPECT_EQ(total, 900000 / 5 - 100000 / 5 + 1);
    EXPECT_EQ(marked, 1);
    EXPECT_LT(items.size(), static_cast<size_t>(width));  // folded to well under one item per pixel
    for (size_t i = 1; i < items.size(); ++i) EXPECT_EQ(items[i].first, items[i - 1].first + items[i - 1].count);
  }
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
  EXPECT_EQ(d.blocks[1].origin, 1000000);
  EXPECT_EQ(d.blocks[1].lanes.at(0).events.at(0).start, 0);  // 1 000 000 ns on its own clock
  // The kernel nests inside its region: one row deeper, same lane title.
  ASSERT_EQ(d.blocks[1].lanes.size(), 2u);
  EXPECT_EQ(d.blocks[1].lanes[1].depth, 1);
  EXPECT_EQ(d.blocks[1].lanes[1].title, "host:1");
  EXPECT_EQ(d.blocks[1].lanes[1].events.at(0).start, 10000);
  EXPECT_EQ(d.names[d.blocks[1].lanes[1].events[0].kernel], "k0_fused_add_relu");
  EXPECT_EQ(d.blocks[0].lanes.at(0).events.at(1).start, 3000);
}

TEST(TimelineLanes, NestedEventsTakeDeeperRowsAndSiblingsShareOne) {
  session::Session s;
  auto ev = [](const char* name, int64_t start, int64_t dur) {
    return test::timeline_event(-1, "host:7", "region", name, start, dur);
  };
  // outer [0, 100) holds a [10, 40) and b [50, 90); a holds a1 [20, 30); c [200, 210) is alone.
  s.timeline = {ev("b", 50, 40), ev("outer", 0, 100), ev("a1", 20, 10), ev("a", 10, 30), ev("c", 200, 10)};
  auto d = pack_timeline(s);
  ASSERT_EQ(d.blocks.size(), 1u);
  EXPECT_EQ(d.blocks[0].title, "compile / import");
  const auto& rows = d.blocks[0].lanes;
  ASSERT_EQ(rows.size(), 3u);
  auto names = [&](const TimelineLane& l) {
    std::vector<std::string> out;
    for (const auto& e : l.events) out.push_back(d.names[e.name]);
    return out;
  };
  EXPECT_EQ(names(rows[0]), (std::vector<std::string>{"outer", "c"}));
  EXPECT_EQ(names(rows[1]), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(names(rows[2]), (std::vector<std::string>{"a1"}));
  for (const auto& row : rows) {  // no row holds overlapping events (the binary search relies on it)
    for (size_t i = 1; i < row.events.size(); ++i)
      EXPECT_GE(row.events[i].start, row.events[i - 1].start + row.events[i - 1].dur);
  }
}

TEST(TimelineLanes, FoldsCarryTheMarkOfTheSelectedKernel) {
  auto lane = lane_of({{0, 1}, {10, 1}, {20, 1}, {30, 1}, {5000, 1}});
  lane.events[2].kernel = 7;
  lane.events[2].region = 3;
  TimelineGeometry g;
  g.fit(0, 10000, 1000);  // 10 ns per pixel: the first four fold together
  auto items = visible_items(lane, g, 1000, EventMark{7, 3});
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0].count, 4);
  EXPECT_TRUE(items[0].marked);
  EXPECT_FALSE(items[1].marked);
  EXPECT_FALSE(visible_items(lane, g, 1000, EventMark{7, 4})[0].marked);  // same name, other region
  EXPECT_TRUE(visible_items(lane, g, 1000, EventMark{7, -1})[0].marked);   // any region
  EXPECT_FALSE(visible_items(lane, g, 1000)[0].marked);                     // nothing selected
}

TEST(TimelineRuler, StepsAreRoundAndAboutAHundredPixels) {
  EXPECT_DOUBLE_EQ(ruler_step_ns(1.0), 100);
  EXPECT_DOUBLE_EQ(ruler_step_ns(1.5), 200);
  EXPECT_DOUBLE_EQ(ruler_step_ns(4.0), 500);
  EXPECT_DOUBLE_EQ(ruler_step_ns(10000), 1e6);
  for (double s : {0.3, 7.0, 123.0, 4.5e4}) {
    EXPECT_GE(ruler_step_ns(s) / s, 100 - 1e-9);
    EXPECT_LT(ruler_step_ns(s) / s, 500);
  }
}

TEST(TimelinePanel, ClickingAKernelEventSelectsKernelAndRun) {
  test::PanelOn<TimelinePanel> shown(1000, 400, two_run_session());
  auto& [ctx, panel] = shown;
  ctx.setRun(0);
  auto* canvas = panel.canvas();
  QTest::qWait(10);
  // The kernel event: block 1 (default · kiln), lane host:1, its second row (inside the region).
  QPoint at = canvas->pointOf(1, 1, 0);
  auto hit = canvas->hitAt(at);
  ASSERT_EQ(hit.block, 1);
  ASSERT_EQ(hit.lane, 1);
  ASSERT_EQ(hit.event, 0);
  QTest::mouseClick(canvas, Qt::LeftButton, {}, at);
  EXPECT_EQ(ctx.current().kernel, "k0_fused_add_relu");
  EXPECT_EQ(ctx.current().run, 1);
  EXPECT_EQ(ctx.current().compile_id, "[0/0]");
}

TEST(TimelinePanel, AKernelSelectedElsewhereIsScrolledIntoView) {
  test::PanelOn<TimelinePanel> shown(1000, 400, two_run_session());
  auto& [ctx, panel] = shown;
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

TEST(TimelinePanel, ZoomingPublishesTheVisibleRangeThrottled) {
  test::PanelOn<TimelinePanel> shown(1000, 400, two_run_session());
  auto& [ctx, panel] = shown;
  ctx.setRun(1);
  QTest::qWait(150);  // the fit's own publication
  QSignalSpy spy(&ctx, &SelectionContext::selectionChanged);
  auto* canvas = panel.canvas();
  QPoint middle(TimelineCanvas::kLabelWidth + 400, 30);
  for (int i = 0; i < 5; ++i) {
    QWheelEvent wheel(middle, canvas->mapToGlobal(middle), {}, {0, 120}, Qt::NoButton, {}, Qt::NoScrollPhase, false);
    QApplication::sendEvent(canvas, &wheel);
  }
  EXPECT_EQ(spy.count(), 0);  // not on every step
  QTest::qWait(250);
  ASSERT_EQ(spy.count(), 1);
  EXPECT_TRUE(spy[0][1].toUInt() & kRangePart);
  // In the selected run's clock: that run's events start at 1 000 000 ns.
  const auto r = ctx.current().range;
  double area = canvas->width() - TimelineCanvas::kLabelWidth;
  EXPECT_EQ(r.start_ns, 1000000 + static_cast<int64_t>(canvas->geometry().t_of(0)));
  EXPECT_EQ(r.end_ns, 1000000 + static_cast<int64_t>(canvas->geometry().t_of(area)));
}

TEST(TimelinePanel, KernelEventsInsideFoldsAreMarked) {
  test::PanelOn<TimelinePanel> shown(1000, 400, two_run_session());
  auto& [ctx, panel] = shown;
  ctx.selectKernel("k0_fused_add_relu", "[0/0]");
  auto* canvas = panel.canvas();
  const auto& lane = canvas->data().blocks[1].lanes[1];
  auto items = visible_items(lane, canvas->geometry(), canvas->width() - TimelineCanvas::kLabelWidth,
                             EventMark{canvas->data().find("k0_fused_add_relu"), canvas->data().find("[0/0]")});
  ASSERT_FALSE(items.empty());
  EXPECT_TRUE(items[0].marked);
  // Painting outlines it: an orange pixel along the event's top edge.
  QImage image(canvas->size(), QImage::Format_ARGB32);
  QPainter p(&image);
  canvas->renderTo(p, canvas->width(), canvas->height());
  p.end();
  QPoint c = canvas->pointOf(1, 1, 0);
  int top = c.y() - TimelineCanvas::kRowHeight / 2 + 1;
  bool orange = false;
  for (int y = top - 1; y <= top + 2; ++y) {
    QColor px = image.pixelColor(c.x(), y);
    orange |= px.red() > 200 && px.green() < 140 && px.blue() < 60;
  }
  EXPECT_TRUE(orange);
}

TEST(TimelineLanes, AMemoryLaneIsACurveWithItsPeakNotEvents) {
  auto s = two_run_session();
  auto sample = [](int64_t at, int64_t bytes) {
    auto e = test::timeline_event(1, "memory cuda:0", "memory", "allocated", at, 0);
    e.args_json = "{\"bytes\": " + std::to_string(bytes) + "}";
    return e;
  };
  s->timeline.push_back(sample(1020000, 1 << 20));
  s->timeline.push_back(sample(1005000, 2 << 20));
  auto peak = test::timeline_event(1, "memory cuda:0", "memory peak", "buffer relu", 1005000, 0);
  peak.args_json = "{\"bytes\": 2097152}";
  s->timeline.push_back(peak);
  auto d = pack_timeline(*s);
  const TimelineLane* memory = nullptr;
  for (const auto& b : d.blocks)
    for (const auto& l : b.lanes)
      if (l.is_memory()) memory = &l;
  ASSERT_NE(memory, nullptr);
  EXPECT_EQ(memory->run, 1);
  EXPECT_EQ(memory->title, "memory cuda:0 · peak 2.0 MiB");
  EXPECT_TRUE(memory->events.empty());
  ASSERT_EQ(memory->memory.size(), 2u);
  EXPECT_EQ(memory->memory[0], (std::pair<int64_t, int64_t>{5000, 2 << 20})) << "time order, from the block's origin";
  EXPECT_EQ(memory->memory_peak, 2 << 20);
  EXPECT_EQ(memory->memory_peak_at, 5000);
  ASSERT_EQ(memory->at_peak.size(), 1u);
  EXPECT_EQ(memory->at_peak[0].first, "buffer relu");

  // Drawn: the panel paints the curve without crashing and in the curve's colour.
  test::PanelOn<TimelinePanel> shown(900, 400, s);
  auto& [ctx, panel] = shown;
  QApplication::processEvents();
  QImage img(900, 400, QImage::Format_ARGB32);
  img.fill(Qt::white);
  QPainter p(&img);
  panel.render(&p);
  p.end();
  bool purple = false;
  for (int y = 0; y < img.height() && !purple; ++y)
    for (int x = 0; x < img.width() && !purple; ++x) purple = img.pixelColor(x, y) == QColor(196, 181, 253);
  EXPECT_TRUE(purple) << "the memory curve's fill";
}
