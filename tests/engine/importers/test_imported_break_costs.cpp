// What each graph break of an imported torch.compile run costs: compile time of the resume functions
// from the TORCH_TRACE log, the gap between regions per profiler step from a joined profiler trace,
// and an explicit "not measured" where the profiler side is missing.
#include "engine/importers/imported_break_costs.h"

#include <gtest/gtest.h>

#include <fstream>

#include "engine/importers/import_files.h"
#include "engine/report/render_html.h"
#include "engine/report/render_markdown.h"
#include "engine/session/store.h"
#include "tests/support/paths.h"

using namespace kiln;  // NOLINT

namespace {

const std::string kLog = test::data("traces/breaky_dynamic.log");  // pid 822

std::string x(const char* name, const char* cat, int64_t ts, int64_t dur, int pid, int tid, int corr = -1) {
  std::string args = corr >= 0 ? ", \"args\": {\"correlation\": " + std::to_string(corr) + "}" : "";
  return std::string("{\"ph\": \"X\", \"name\": \"") + name + "\", \"cat\": \"" + cat + "\", \"ts\": " +
         std::to_string(1795334100000000 + ts) + ", \"dur\": " + std::to_string(dur) + ", \"pid\": " +
         std::to_string(pid) + ", \"tid\": " + std::to_string(tid) + args + "}";
}

// One profiler step of the same process: regions 0/1, 1/1, 2/1, 3/1 with gaps of 200, 50 and 300 us;
// a 40 us kernel launched in the first gap.
std::string write_profile(bool steps) {
  std::string events = steps ? x("ProfilerStep#1", "user_annotation", 0, 1000, 822, 1) + ",\n" : "";
  events += x("Torch-Compiled Region: 0/1", "cpu_op", 10, 90, 822, 1) + ",\n" +
            x("cudaLaunchKernel", "cuda_runtime", 150, 5, 822, 1, 7) + ",\n" +
            x("aten::add", "kernel", 160, 40, 0, 7, 7) + ",\n" +
            x("Torch-Compiled Region: 1/1", "cpu_op", 300, 100, 822, 1) + ",\n" +
            x("Torch-Compiled Region: 2/1", "cpu_op", 450, 50, 822, 1) + ",\n" +
            x("Torch-Compiled Region: 3/1", "cpu_op", 800, 100, 822, 1);
  const std::string path = test::temp_dir() + (steps ? "/breaky_steps.json" : "/breaky_nosteps.json");
  std::ofstream(path) << "{\"traceEvents\": [\n" << events << "\n]}\n";
  return path;
}

session::Session import(std::vector<std::string> paths) {
  importers::ImportRequest req;
  req.paths = std::move(paths);
  auto result = importers::import_files(req);
  EXPECT_EQ(result.sessions.size(), 1u);
  return std::move(result.sessions.at(0).session);
}

}  // namespace

TEST(ImportedBreakCosts, LogAloneGivesCompileTimeAndSaysTheGapIsNotMeasured) {
  auto s = import({kLog});
  ASSERT_EQ(s.break_costs.size(), 3u);
  for (const auto& c : s.break_costs) {
    EXPECT_NE(c.unmeasured.find("no profiler trace"), std::string::npos);
    EXPECT_EQ(c.total_ms, 0);
    EXPECT_EQ(c.compiles, 2);
  }
  // Ranked by compile time: resume_at_47 (375.0 + 791.0 ms), _at_42 (387.9 + 495.1), _at_43 (359.9 + 434.3).
  EXPECT_EQ(s.break_costs[0].line, 47);
  EXPECT_NEAR(s.break_costs[0].compile_ms, 374.997 + 791.028, 1e-6);
  EXPECT_EQ(s.break_costs[1].line, 42);
  EXPECT_NEAR(s.break_costs[1].compile_ms, 387.913 + 495.11, 1e-6);
  EXPECT_EQ(s.break_costs[2].line, 43);
  const std::string md = report::render_markdown(s);
  EXPECT_NE(md.find("not measured (no profiler trace joined"), std::string::npos);
}

TEST(ImportedBreakCosts, JoinedProfilerTraceGivesTheGapPerStepRanked) {
  auto s = import({kLog, write_profile(true)});
  ASSERT_EQ(s.break_costs.size(), 3u);
  for (const auto& c : s.break_costs) EXPECT_TRUE(c.unmeasured.empty()) << c.unmeasured;
  EXPECT_EQ(s.break_costs[0].line, 47);
  EXPECT_NEAR(s.break_costs[0].gap_ms, 0.300, 1e-9);
  EXPECT_EQ(s.break_costs[1].line, 42);
  EXPECT_NEAR(s.break_costs[1].gap_ms, 0.200, 1e-9);
  EXPECT_NEAR(s.break_costs[1].device_ms, 0.040, 1e-9);
  EXPECT_EQ(s.break_costs[2].line, 43);
  EXPECT_NEAR(s.break_costs[2].gap_ms, 0.050, 1e-9);
  EXPECT_NEAR(s.break_costs[0].share, 0.3, 1e-9);
  EXPECT_EQ(s.break_costs[0].iterations, 1);

  // Stored and read back; the report lists the sites most costly first.
  const std::string path = test::temp_dir() + "/imported_costs.kiln";
  session::save_session(path, s);
  auto back = session::load_session(path);
  ASSERT_EQ(back.break_costs.size(), 3u);
  EXPECT_NEAR(back.break_costs[1].device_ms, 0.040, 1e-9);
  EXPECT_EQ(back.break_costs[1].compiles, 2);
  const std::string md = report::render_markdown(back);
  const size_t at47 = md.find("sample_models.py:47"), at42 = md.find("sample_models.py:42"),
               at43 = md.find("sample_models.py:43");
  ASSERT_NE(at47, std::string::npos);
  EXPECT_LT(at47, at42);
  EXPECT_LT(at42, at43);
  EXPECT_NE(md.find("0.300 ms"), std::string::npos);
}

TEST(ImportedBreakCosts, NoStepMarkersIsStated) {
  auto s = import({kLog, write_profile(false)});
  ASSERT_EQ(s.break_costs.size(), 3u);
  for (const auto& c : s.break_costs) {
    EXPECT_NE(c.unmeasured.find("no ProfilerStep markers"), std::string::npos) << c.unmeasured;
    EXPECT_EQ(c.gap_ms, 0);
  }
}

TEST(ImportedBreakCosts, HostileStringsAreEscapedInReports) {
  auto s = import({kLog});
  s.break_costs[0].unmeasured = "<script>alert(1)</script>";
  const std::string html = report::render_html(s);
  EXPECT_EQ(html.find("<script>alert(1)"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)"), std::string::npos);
}
