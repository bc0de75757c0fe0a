// The analyses reports share with the workbench (one home each, engine/report): observations and
// kernel time share appear in the HTML and Markdown reports as the panels show them.
#include <gtest/gtest.h>

#include "engine/report/gpu_kernel_stats.h"
#include "engine/report/observations.h"
#include "engine/report/render_html.h"
#include "engine/report/render_markdown.h"
#include "engine/session/session.h"

using namespace kiln;

namespace {

session::Session two_regions_same_kernel_name() {
  session::Session s;
  s.model.path = "m.pt";
  session::Run eager, def;
  eager.id = 0;
  eager.mode = "eager";
  eager.backend = "eager";
  eager.latency.median_ms = 1.0;
  eager.speedup_vs_eager = 1.0;
  def.id = 1;
  def.mode = "default";
  def.backend = "kiln";
  def.latency.median_ms = 0.5;
  def.speedup_vs_eager = 2.0;
  s.runs = {eager, def};
  for (const char* cid : {"[0/0]", "[1/0]"}) {
    session::Kernel k;
    k.name = "k0_pointwise";
    k.compile_id = cid;
    s.kernels.push_back(k);
  }
  // k0 of [0/0] runs 3 ms, k0 of [1/0] 1 ms: shares 75 % and 25 %, not 100 % for both.
  session::TimelineEvent a, b;
  a.run = b.run = 1;
  a.lane = b.lane = "cuda:0/stream 7";
  a.category = b.category = "kernel";
  a.name = b.name = a.kernel = b.kernel = "k0_pointwise";
  a.compile_id = "[0/0]";
  a.dur_ns = 3000000;
  b.compile_id = "[1/0]";
  b.dur_ns = 1000000;
  s.timeline = {a, b};
  return s;
}

}  // namespace

TEST(ReportAnalyses, KernelTimeShareIsPerRegionNotPerName) {
  auto s = two_regions_same_kernel_name();
  auto stats = report::kernel_stats(s, 1);
  EXPECT_DOUBLE_EQ(report::launcher_time(stats, s.kernels[0]).share, 0.75);
  EXPECT_DOUBLE_EQ(report::launcher_time(stats, s.kernels[1]).share, 0.25);
  auto html = report::render_html(s);
  EXPECT_NE(html.find("75.0%"), std::string::npos);
  EXPECT_NE(html.find("25.0%"), std::string::npos);
  EXPECT_EQ(html.find("100.0%"), std::string::npos);
}

TEST(ReportAnalyses, ReportsCarryTheWorkbenchObservations) {
  auto s = two_regions_same_kernel_name();
  auto seen = report::observations(s);
  ASSERT_FALSE(seen.empty());
  EXPECT_NE(seen[0].find("default is 2.00x faster than eager"), std::string::npos) << seen[0];
  auto html = report::render_html(s);
  // Verdict first: the reports open with the verdict line and the observations under it.
  const std::string verdict = "Fastest: default, 2.00x eager (0.500 ms against 1.000 ms median).";
  EXPECT_EQ(report::verdict(s), verdict);
  EXPECT_LT(html.find(verdict), html.find("<h2>Graph breaks</h2>"));
  EXPECT_NE(html.find("<ul class=observations><li>default is 2.00x faster than eager"), std::string::npos);
  auto md = report::render_markdown(s);
  EXPECT_EQ(md.find("# Kiln session: m.pt\n\n**Verdict:** " + verdict + "\n\n- default is 2.00x faster than eager"), 0u)
      << md;
}
