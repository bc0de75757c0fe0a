// `kiln import` as a user runs it: samples, a multi-rank TORCH_TRACE directory, a log joined with
// its profiler trace, errors; the written sessions read back through the store, and `kiln report
// --format json` works on them when that command is built.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "engine/session/store.h"
#include "tests/engine/importers/torch_trace/trace_text.h"
#include "tests/support/paths.h"

using namespace kiln;  // NOLINT
namespace fs = std::filesystem;

namespace {

int run_kiln(const std::string& args, std::string& out) {
  return test::run_command(test::binary("app/kiln") + " " + args, out);
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

bool report_command_built() {
  std::string out;
  run_kiln("--help", out);
  return has(out, "\n  report");
}

}  // namespace

TEST(ImportCli, BreakyDynamicSummaryAndSession) {
  std::string dir = test::temp_dir(), out;
  std::string session_path = dir + "/breaky.kiln";
  ASSERT_EQ(run_kiln("import " + test::data("traces/breaky_dynamic.log") + " -o " + session_path, out), 0) << out;
  EXPECT_TRUE(has(out, "compile ids 8 [0/0] [1/0] [2/0] [3/0] [0/1] [1/1] [2/1] [3/1]")) << out;
  EXPECT_TRUE(has(out, "graph breaks 6 (3 unique)")) << out;
  EXPECT_TRUE(has(out, "[0/0] sample_models.py:42 `print(\"mid\")`")) << out;
  EXPECT_TRUE(has(out, "[2/0] sample_models.py:47 `scale = float(y.mean().item())`")) << out;
  EXPECT_TRUE(has(out, "recompiles 4")) << out;
  EXPECT_TRUE(has(out, "[0/1] 0/0: tensor 'x' size mismatch at index 0. expected 4, actual 8")) << out;
  EXPECT_TRUE(has(out, "kernels 16 (8 triton)")) << out;
  EXPECT_TRUE(has(out, "skipped or kept generically 0")) << out;
  EXPECT_TRUE(has(out, "wrote " + session_path)) << out;

  auto s = session::load_session(session_path);
  EXPECT_EQ(s.origin, "TORCH_TRACE import");
  ASSERT_EQ(s.regions.size(), 8u);
  EXPECT_EQ(s.regions[4].compile_id, "[0/1]");
  EXPECT_EQ(s.regions[4].recompile_reason, "0/0: tensor 'x' size mismatch at index 0. expected 4, actual 8");
  EXPECT_FALSE(s.regions[0].guards.empty());
  ASSERT_EQ(s.breaks.size(), 6u);
  EXPECT_EQ(s.breaks[0].info.loc.line, 42);
  EXPECT_EQ(s.breaks[0].user_stack.back(), "/home/user/kiln/examples/data/src/sample_models.py:42 in forward");
  EXPECT_EQ(s.kernels.size(), 16u);
  EXPECT_FALSE(s.timeline.empty());
}

TEST(ImportCli, ReportJsonOnAnImportedSession) {
  if (!report_command_built()) GTEST_SKIP() << "kiln report is not built yet";
  std::string dir = test::temp_dir(), out;
  std::string session_path = dir + "/breaky.kiln";
  ASSERT_EQ(run_kiln("import " + test::data("traces/breaky_dynamic.log") + " -o " + session_path, out), 0) << out;
  ASSERT_EQ(run_kiln("report " + session_path + " --format json", out), 0) << out;
  auto j = nlohmann::json::parse(out.substr(out.find('{')));
  std::string text = j.dump();
  EXPECT_TRUE(has(text, "[3/1]"));
  EXPECT_TRUE(has(text, "tensor 'x' size mismatch at index 0. expected 4, actual 8"));
  EXPECT_TRUE(has(text, "scale = float(y.mean().item())"));
  EXPECT_TRUE(has(text, "triton_poi_fused_addmm_relu_0"));
  EXPECT_TRUE(has(text, "TENSOR_MATCH"));
}

TEST(ImportCli, MultiRankDirectory) {
  std::string dir = test::temp_dir(), out;
  fs::copy(test::data("tlparse/multi_rank_logs"), dir + "/logs");
  ASSERT_EQ(run_kiln("import " + dir + "/logs --all -o " + dir + "/run.kiln", out), 0) << out;
  for (int rank = 0; rank < 4; ++rank) {
    std::string path = dir + "/run.rank" + std::to_string(rank) + ".kiln";
    ASSERT_TRUE(fs::exists(path)) << out;
    EXPECT_EQ(session::load_session(path).rank, rank);
  }
  EXPECT_TRUE(has(out, "(rank 1)")) << out;

  // Without --all: the newest log only, and a word about the rest.
  fs::last_write_time(dir + "/logs/dedicated_log_torch_trace_rank_3.log",
                      fs::file_time_type::clock::now() + std::chrono::hours(1));
  ASSERT_EQ(run_kiln("import " + dir + "/logs -o " + dir + "/newest.kiln", out), 0) << out;
  EXPECT_EQ(session::load_session(dir + "/newest.kiln").rank, 3);
  EXPECT_TRUE(has(out, "left 3 older file(s) in the directory; --all imports every one")) << out;
}

TEST(ImportCli, LogAndProfilerTraceJoined) {
  std::string dir = test::temp_dir(), out;
  test::TraceText log;
  log.pid = 1034;
  std::string ctx = test::TraceText::ctx(0, 0);
  log.record("\"dynamo_start\": {\"stack\": []}", ctx);
  log.record("\"inductor_output_code\": {\"filename\": \"m.py\"}", ctx,
             "triton_poi_fused_addmm_relu_0 = async_compile.triton('triton_poi_fused_addmm_relu_0', '''\n"
             "@triton.jit\ndef triton_poi_fused_addmm_relu_0(): pass\n''', device_str='cuda')");
  log.record("\"compilation_metrics\": {\"co_name\": \"forward\", \"start_time\": 1795334250.0}", ctx);
  log.write(dir + "/mlp.log");
  ASSERT_EQ(run_kiln("import " + dir + "/mlp.log " + test::data("traces/kineto_small_mlp.json") + " -o " + dir + "/j.kiln",
                 out),
            0)
      << out;
  EXPECT_FALSE(has(out, "not joined")) << out;
  EXPECT_TRUE(has(out, "runs 1, timeline events 174")) << out;
  auto s = session::load_session(dir + "/j.kiln");
  int linked = 0;
  for (const auto& e : s.timeline) linked += e.kernel == "triton_poi_fused_addmm_relu_0" && e.compile_id == "[0/0]";
  EXPECT_EQ(linked, 6);  // three launches on the host, three kernels on the GPU
  EXPECT_EQ(s.regions.size(), 1u);
  EXPECT_EQ(s.regions[0].hits, 3);
}

TEST(ImportCli, ErrorsAreOneLineAndNameTheInput) {
  std::string dir = test::temp_dir(), out;
  EXPECT_EQ(run_kiln("import /nonexistent/trace_dir", out), 1);
  EXPECT_TRUE(has(out, "kiln: error: /nonexistent/trace_dir: no such file or directory")) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
  std::ofstream(dir + "/notes.txt") << "just some text\n";
  EXPECT_EQ(run_kiln("import " + dir + "/notes.txt", out), 1);
  EXPECT_TRUE(has(out, dir + "/notes.txt: neither a TORCH_TRACE log nor a profiler")) << out;
  fs::create_directories(dir + "/empty");
  EXPECT_EQ(run_kiln("import " + dir + "/empty", out), 1);
  EXPECT_TRUE(has(out, dir + "/empty: no TORCH_TRACE logs")) << out;
}
