// A run's memory read back from its timeline: the lane as a curve, the peak and what was live there
// by owner, in the HTML timeline and tables and in the JSON report; hostile events cannot break it.
#include "engine/report/memory_view.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "engine/report/observations.h"
#include "engine/report/render_html.h"
#include "engine/report/render_json.h"
#include "engine/report/render_markdown.h"
#include "engine/report/svg_timeline.h"
#include "tests/support/session_builders.h"

using namespace kiln;

namespace {

session::TimelineEvent memory_event(int run, const std::string& category, const std::string& name, int64_t at,
                                    const std::string& args) {
  auto e = test::timeline_event(run, "memory cuda:0", category, name, at, 0);
  e.args_json = args;
  return e;
}

session::Session memory_session() {
  session::Session s;
  session::Run eager, kiln;
  eager.id = 0, eager.mode = "eager", eager.backend = "eager", eager.peak_memory_bytes = 3 << 20;
  kiln.id = 1, kiln.mode = "default", kiln.backend = "kiln", kiln.peak_memory_bytes = 4 << 20;
  s.runs = {eager, kiln};
  s.timeline.push_back(test::timeline_event(1, "host", "kernel", "k0", 0, 5000));
  int64_t live[] = {1 << 20, 3 << 20, 4 << 20, 2 << 20};
  for (int i = 0; i < 4; ++i)
    s.timeline.push_back(memory_event(1, "memory", "allocated", 1000 * (4 - i), "{\"bytes\": " + std::to_string(live[3 - i]) + "}"));
  s.timeline.push_back(memory_event(1, "memory peak", "buffer <script>x</script>", 2000, "{\"bytes\": 3145728}"));
  s.timeline.push_back(memory_event(1, "memory peak", "extern linear_1", 2000, "{\"bytes\": 1048576}"));
  return s;
}

}  // namespace

TEST(MemoryView, TheLaneIsReadBackInTimeOrderWithItsPeakAndOwners) {
  auto s = memory_session();
  auto lanes = report::memory_lanes(s.timeline);
  ASSERT_EQ(lanes.size(), 1u);
  const auto& lane = lanes[0];
  EXPECT_EQ(lane.lane, "memory cuda:0");
  ASSERT_EQ(lane.points.size(), 4u);
  for (size_t i = 1; i < lane.points.size(); ++i) EXPECT_LT(lane.points[i - 1].first, lane.points[i].first);
  EXPECT_EQ(lane.peak_bytes, 4 << 20);
  EXPECT_EQ(lane.peak_ns, 2000);
  ASSERT_EQ(lane.at_peak.size(), 2u);
  EXPECT_EQ(lane.at_peak[0].first, "buffer <script>x</script>") << "largest first";
  EXPECT_EQ(lane.at_peak[1].second, 1 << 20);
}

TEST(MemoryView, OddBytesReadAsZero) {
  for (const char* args : {"", "not json", "{\"bytes\": \"12\"}", "{\"bytes\": 1.5}", "[1,2]", "{\"bytes\": null}",
                           "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]"}) {
    auto e = memory_event(0, "memory", "allocated", 0, args);
    EXPECT_EQ(report::bytes_of(e), 0) << args;
  }
  EXPECT_FALSE(report::is_memory_event(test::timeline_event(0, "host", "memory", "x", 0, 0)))
      << "memory events live on memory lanes";
}

TEST(MemoryView, TheTimelineDrawsTheLaneAsACurveWithItsPeak) {
  auto s = memory_session();
  std::vector<session::TimelineEvent> run1;
  for (const auto& e : s.timeline)
    if (e.run == 1) run1.push_back(e);
  std::string svg = report::timeline_svg(run1);
  EXPECT_NE(svg.find("class=\"memory\""), std::string::npos);
  EXPECT_NE(svg.find("class=\"peak\""), std::string::npos);
  EXPECT_NE(svg.find("peak 4.0 MiB"), std::string::npos) << svg.substr(0, 2000);
  EXPECT_EQ(svg.find("<script>"), std::string::npos);
  EXPECT_EQ(svg.find("class=\"instant\""), std::string::npos) << "no longer drawn as ticks";
}

TEST(MemoryView, ReportsShowWhatWasLiveAtThePeak) {
  auto s = memory_session();
  std::string html = report::render_html(s);
  EXPECT_NE(html.find("Memory at the peak"), std::string::npos);
  EXPECT_NE(html.find("extern linear_1"), std::string::npos);
  EXPECT_NE(html.find("buffer &lt;script&gt;x&lt;/script&gt;"), std::string::npos);
  EXPECT_EQ(html.find("<script>"), std::string::npos);

  // The observation that a mode peaks above eager names what was largest at that peak.
  bool named = false;
  for (const auto& o : report::observations(s))
    named |= o.find("peaks at 4.0 MiB") != std::string::npos &&
             o.find("largest at its peak: buffer <script>x</script> 3.0 MiB, extern linear_1 1.0 MiB") != std::string::npos;
  EXPECT_TRUE(named);

  std::string md = report::render_markdown(s);
  EXPECT_NE(md.find("## Memory at the peak"), std::string::npos);
  EXPECT_NE(md.find("| default / kiln | cuda:0 | 4.0 MiB | buffer &lt;script&gt;x&lt;/script&gt; 3.0 MiB, extern linear\\_1 1.0 MiB |"),
            std::string::npos)
      << md;

  auto j = nlohmann::json::parse(report::render_json(s));
  ASSERT_EQ(j["runs"].size(), 2u);
  EXPECT_TRUE(j["runs"][0]["memory"].empty()) << "eager recorded no lane here";
  const auto& m = j["runs"][1]["memory"][0];
  EXPECT_EQ(m["lane"], "memory cuda:0");
  EXPECT_EQ(m["peak_bytes"], 4 << 20);
  EXPECT_EQ(m["samples"], 4);
  EXPECT_EQ(m["live_at_peak"][0]["owner"], "buffer <script>x</script>");
  EXPECT_EQ(m["live_at_peak"][1]["bytes"], 1 << 20);
}

TEST(MemoryView, LayoutCopiesOfWeightsFoldIntoOneEntry) {
  report::MemoryLane lane;
  lane.at_peak = {{"extern x_1", 5 << 20}, {"layout copy of conv1_weight", 3 << 20},
                  {"layout copy of conv2_weight", 2 << 20}, {"buffer relu", 1 << 20}};
  auto folded = report::folded_at_peak(lane);
  ASSERT_EQ(folded.size(), 3u);
  EXPECT_EQ(folded[0], (std::pair<std::string, int64_t>{"extern x_1", 5 << 20}));
  EXPECT_EQ(folded[1], (std::pair<std::string, int64_t>{"layout copies of 2 weights", 5 << 20}));
  EXPECT_EQ(folded[2].first, "buffer relu");
  lane.at_peak.pop_back();
  lane.at_peak.erase(lane.at_peak.begin() + 2);  // one copy left: kept by its name
  folded = report::folded_at_peak(lane);
  ASSERT_EQ(folded.size(), 2u);
  EXPECT_EQ(folded[1].first, "layout copy of conv1_weight");
}
