// The analyses reports share with the workbench (one home each, engine/report): observations and
// kernel time share appear in the HTML and Markdown reports as the panels show them.
#include <gtest/gtest.h>

#include <algorithm>

#include "engine/importers/import_files.h"
#include "engine/report/gpu_kernel_stats.h"
#include "engine/report/recompile_history.h"
#include "tests/support/paths.h"
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

// Memory: a mode that peaks above eager is said so, with both peaks; one within 5 % is not.
TEST(ReportAnalyses, AModeThatNeedsMoreMemoryThanEagerIsObserved) {
  auto s = two_regions_same_kernel_name();
  for (auto& r : s.runs) r.peak_memory_bytes = r.mode == "eager" ? (100 << 20) : (150 << 20);
  auto seen = report::observations(s);
  const auto said = std::find_if(seen.begin(), seen.end(), [](const std::string& o) { return o.find("peaks at") != std::string::npos; });
  ASSERT_NE(said, seen.end());
  EXPECT_NE(said->find("150.0 MiB of memory, 50 % above eager's 100.0 MiB"), std::string::npos) << *said;
  for (auto& r : s.runs)
    if (r.mode != "eager") r.peak_memory_bytes = 104 << 20;
  for (const auto& o : report::observations(s)) EXPECT_EQ(o.find("peaks at"), std::string::npos) << o;
}

// Recompile advice: the same dimension changing again and again is named, with what to do; an
// imported recompile shows the guard that failed, read from the previous entry of its region.
TEST(ReportAnalyses, RecompilesOnTheSameDimensionComeWithAdvice) {
  importers::ImportRequest req;
  req.paths = {test::data("traces/breaky_dynamic.log")};
  auto s = importers::import_files(req).sessions.at(0).session;
  auto history = report::recompile_history(s);
  ASSERT_EQ(history.size(), 4u);
  ASSERT_EQ(history[0].failed_guards.size(), 1u);
  EXPECT_EQ(history[0].failed_guards[0].rfind("TENSOR_MATCH: check_tensor(L['x'], Tensor,", 0), 0u);
  EXPECT_NE(history[0].failed_guards[0].find("size=[4, 64]"), std::string::npos);
  auto churn = report::dimension_churn(history);
  ASSERT_EQ(churn.size(), 2u);
  EXPECT_EQ(churn[0].tensor, "y");
  EXPECT_EQ(churn[0].dim, 0);
  EXPECT_EQ(churn[0].recompiles, 3);
  EXPECT_EQ(churn[0].sizes, (std::vector<std::string>{"4", "8"}));
  auto seen = report::observations(s);
  const std::string advice =
      "dimension 0 of 'y' changed in 3 recompiles (sizes 4, 8): compile with dynamic=True (kiln: --dynamic true) or "
      "mark it before the call with torch._dynamo.mark_dynamic(y, 0)";
  EXPECT_NE(std::find(seen.begin(), seen.end(), advice), seen.end());
  // x changed once: Dynamo's automatic dynamic shapes take care of that, no advice.
  for (const auto& o : seen) EXPECT_EQ(o.find("of 'x'"), std::string::npos) << o;

  // Kiln's own events: guard failures of one region, call after call.
  session::Session k;
  for (int call = 1; call <= 3; ++call) {
    capture::Event f;
    f.kind = capture::Event::Kind::GuardFailure;
    f.call = call;
    f.region = 0;
    f.message = "tensor 'x' size mismatch at index 1. expected " + std::to_string(8 << call) + ", actual " +
                std::to_string(16 << call);
    capture::Event r = f;
    r.kind = capture::Event::Kind::Recompile;
    r.compile_id = "[0/" + std::to_string(call) + "]";
    r.message = "recompiling region 0: " + f.message;
    k.events.push_back(f);
    k.events.push_back(r);
  }
  auto kc = report::dimension_churn(report::recompile_history(k));
  ASSERT_EQ(kc.size(), 1u);
  EXPECT_EQ(kc[0].recompiles, 3);
  EXPECT_EQ(kc[0].sizes, (std::vector<std::string>{"16", "32", "64", "128"}));
  EXPECT_EQ(kc[0].compile_ids, (std::vector<std::string>{"[0/1]", "[0/2]", "[0/3]"}));
}
