// What tracing a run's window cost, read back from its profiler event and shown with its timeline (HTML)
// and in its own section (Markdown); any args a session holds read as a value or as nothing, never a throw.
#include "engine/report/trace_cost.h"

#include <gtest/gtest.h>

#include "engine/report/render_html.h"
#include "engine/report/render_markdown.h"

using namespace kiln;

namespace {

session::TimelineEvent profiler_event(int run, const std::string& args) {
  session::TimelineEvent e;
  e.run = run;
  e.lane = "profiler";
  e.category = "profiler";
  e.name = "CUPTI trace";
  e.args_json = args;
  return e;
}

const char* kGraphsWhole =
    R"({"untraced_median_ms":0.3271,"traced_median_ms":0.3495,"overhead":0.0685,"cupti_records":24,"dropped_records":0,)"
    R"("cuda_graphs":"recorded whole in the window; kernels in the detail iterations","graph_records":3,)"
    R"("kernel_detail":{"iterations":3,"traced_median_ms":0.47,"overhead":0.43,"cupti_records":198,"dropped_records":0,)"
    R"("drawn_earlier_ns":14250000}})";

}  // namespace

TEST(TraceCost, AGraphLevelWindowSaysGraphsWholeAndItsDetailIterations) {
  auto c = report::trace_cost_of(profiler_event(1, kGraphsWhole));
  ASSERT_TRUE(c.has_value());
  EXPECT_TRUE(c->graphs_whole);
  EXPECT_EQ(c->graph_records, 3);
  EXPECT_EQ(c->detail_iterations, 3);
  EXPECT_NEAR(c->overhead, 0.0685, 1e-12);
  EXPECT_NEAR(c->detail_overhead, 0.43, 1e-12);
  EXPECT_EQ(report::trace_cost_text(*c),
            "Device traced with CUPTI: the traced iterations' median ran +7 % against the untraced median; CUDA graphs "
            "recorded whole (3 graph records), their kernels from 3 detail iterations after the window (+43 %; drawn right "
            "after it, they ran 14.2 ms later).");
}

TEST(TraceCost, AKernelLevelWindowAndDroppedRecords) {
  auto c = report::trace_cost_of(profiler_event(1, R"({"overhead":-0.19,"cupti_records":400,"dropped_records":12,"cuda_graphs":"kernels recorded"})"));
  ASSERT_TRUE(c.has_value());
  EXPECT_FALSE(c->graphs_whole);
  EXPECT_EQ(report::trace_cost_text(*c), "Device traced with CUPTI: the traced iterations' median ran -19 % against the "
                                         "untraced median; every kernel recorded; 12 records dropped.");
}

TEST(TraceCost, AHostOnlyWindowSaysWhatItRecorded) {
  auto c = report::trace_cost_of(profiler_event(1, R"({"untraced_median_ms":1.29,"traced_median_ms":1.38,"overhead":0.064})"));
  ASSERT_TRUE(c.has_value());
  EXPECT_FALSE(c->cupti);
  EXPECT_EQ(report::trace_cost_text(*c), "Traced on the host (Kiln's spans, LibTorch's ops, memory samples): the traced "
                                         "iterations' median ran +6 % against the untraced median.");
}

TEST(TraceCost, SaysHowManyTracedIterationsItsMedianIsOf) {
  auto c = report::trace_cost_of(
      profiler_event(1, R"({"overhead":0.12,"timed_iterations":20,"cupti_records":90,"cuda_graphs":"kernels recorded"})"));
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->timed_iterations, 20);
  EXPECT_EQ(report::trace_cost_text(*c), "Device traced with CUPTI: the median of 20 traced iterations ran +12 % against "
                                         "the untraced median; every kernel recorded.");
  auto wrong = report::trace_cost_of(profiler_event(1, R"({"overhead":0.12,"timed_iterations":"many"})"));
  ASSERT_TRUE(wrong.has_value());
  EXPECT_EQ(wrong->timed_iterations, 0);
  EXPECT_NE(report::trace_cost_text(*wrong).find("the traced iterations' median"), std::string::npos);
}

TEST(TraceCost, AFailedTraceSaysWhy) {
  auto c = report::trace_cost_of(profiler_event(1, R"({"error":"cuptiActivityEnable: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"})"));
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(report::trace_cost_text(*c), "Device tracing (CUPTI) failed: cuptiActivityEnable: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES.");
}

TEST(TraceCost, AnyOtherArgsReadAsNothingOrAsZero) {
  std::string deep(100000, '[');
  for (const std::string& args : {std::string(), std::string("not json"), std::string("[1,2]"), std::string("{}"),
                                  std::string(R"({"overhead":"7 %"})"), deep, std::string(R"({"cuda_graphs":1})")})
    EXPECT_FALSE(report::trace_cost_of(profiler_event(1, args)).has_value()) << args.substr(0, 40);
  auto other = profiler_event(1, kGraphsWhole);
  other.category = "kernel";
  EXPECT_FALSE(report::trace_cost_of(other).has_value()) << "only profiler events";
  // Wrong types and absurd numbers inside an otherwise readable event: zero, never a throw.
  auto c = report::trace_cost_of(profiler_event(
      1, R"({"overhead":1e300,"dropped_records":-5,"graph_records":1e40,"kernel_detail":{"iterations":"three","overhead":null}})"));
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->dropped, 0);
  EXPECT_EQ(c->detail_iterations, 0);
  EXPECT_EQ(c->graph_records, 0);
  EXPECT_NE(report::trace_cost_text(*c).find("+1000000 %"), std::string::npos) << report::trace_cost_text(*c);
}

TEST(TraceCost, ReportsShowItPerRunAndEscapeWhatTheSessionSaid) {
  session::Session s;
  s.model.path = "m.pt";
  for (int id : {1, 2}) {
    session::Run r;
    r.id = id;
    r.mode = id == 1 ? "reduce-overhead" : "default";
    r.backend = "kiln";
    r.device = "cuda:0";
    r.latency.median_ms = 0.3;
    s.runs.push_back(r);
    session::TimelineEvent it;
    it.run = id;
    it.lane = "host:1";
    it.category = "iteration";
    it.name = "iteration 0";
    it.start_ns = 1000;
    it.dur_ns = 300000;
    s.timeline.push_back(it);
  }
  s.timeline.push_back(profiler_event(1, kGraphsWhole));
  s.timeline.push_back(profiler_event(2, R"({"error":"<script>alert(1)</script> `x` | y"})"));
  auto html = report::render_html(s);
  EXPECT_NE(html.find("CUDA graphs recorded whole (3 graph records)"), std::string::npos);
  EXPECT_NE(html.find("Device tracing (CUPTI) failed: &lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_EQ(html.find("<script>alert"), std::string::npos);
  auto md = report::render_markdown(s);
  auto section = md.find("## What tracing cost");
  ASSERT_NE(section, std::string::npos) << md;
  EXPECT_NE(md.find("- **reduce-overhead / kiln**: Device traced with CUPTI: the traced iterations' median ran +7 %", section),
            std::string::npos) << md.substr(section, 600);
  EXPECT_EQ(md.find("<script>alert"), std::string::npos) << "raw HTML in Markdown renders";
}
