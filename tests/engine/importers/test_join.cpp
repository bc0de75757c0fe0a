// Joining a TORCH_TRACE log and a profiler trace of the same process: runtime regions and Triton
// kernels find their compile id and generated source; unrelated processes stay apart.
#include <gtest/gtest.h>

#include "engine/importers/import_files.h"
#include "engine/importers/join.h"
#include "tests/engine/importers/torch_trace/trace_text.h"
#include "tests/support/paths.h"

using namespace kiln;  // NOLINT

namespace {

// The compile behind kineto_small_mlp.json (pid 1034): one frame, two Triton kernels.
std::string write_mlp_log() {
  test::TraceText log;
  log.pid = 1034;
  std::string ctx = test::TraceText::ctx(0, 0);
  log.record("\"str\": [\"mlp.py\", 0]");
  log.record("\"dynamo_start\": {\"stack\": [{\"line\": 12, \"name\": \"forward\", \"filename\": 0}]}", ctx);
  log.record("\"dynamo_output_graph\": {}", ctx, "class GraphModule(torch.nn.Module):\n    def forward(self, x):");
  log.record("\"inductor_output_code\": {\"filename\": \"/tmp/ti/ab/cmlp.py\"}", ctx,
             "# Topologically Sorted Source Nodes: [linear, relu]\n"
             "triton_poi_fused_addmm_relu_0 = async_compile.triton('triton_poi_fused_addmm_relu_0', '''\n"
             "@triton.jit\ndef triton_poi_fused_addmm_relu_0(in_out_ptr0, xnumel, XBLOCK: tl.constexpr):\n    pass\n"
             "''', device_str='cuda')\n"
             "triton_poi_fused_add_addmm_mul_tanh_1 = async_compile.triton('triton_poi_fused_add_addmm_mul_tanh_1', '''\n"
             "@triton.jit\ndef triton_poi_fused_add_addmm_mul_tanh_1(in_out_ptr0, xnumel, XBLOCK: tl.constexpr):\n    pass\n"
             "''', device_str='cuda')\n");
  log.record("\"compilation_metrics\": {\"compile_id\": \"0/0\", \"co_name\": \"forward\", \"co_filename\": \"mlp.py\", "
             "\"co_firstlineno\": 12, \"start_time\": 1795334250.5, \"entire_frame_compile_time_s\": 1.5}",
             ctx);
  std::string path = test::temp_dir() + "/mlp.log";
  log.write(path);
  return path;
}

}  // namespace

TEST(Join, TraceAndProfilerOfOneProcessBecomeOneSession) {
  importers::ImportRequest req;
  req.paths = {write_mlp_log(), test::data("traces/kineto_small_mlp.json")};
  auto result = importers::import_files(req);
  ASSERT_EQ(result.sessions.size(), 1u);
  EXPECT_TRUE(result.not_joined.empty());
  const auto& g = result.sessions[0];
  EXPECT_EQ(g.files.size(), 2u);
  EXPECT_EQ(g.files[0].pid, 1034);
  EXPECT_EQ(g.files[1].kind, importers::InputKind::ChromeTrace);
  const auto& s = g.session;
  EXPECT_EQ(s.origin, "TORCH_TRACE import + profiler trace import");
  ASSERT_EQ(s.regions.size(), 1u);  // the profiler's own [0/0] record merged into the compiled one
  EXPECT_EQ(s.regions[0].compile_id, "[0/0]");
  EXPECT_EQ(s.regions[0].hits, 3);
  EXPECT_EQ(s.regions[0].metrics.at("runtime calls"), "3");
  EXPECT_FALSE(s.regions[0].graphs.empty());
  ASSERT_EQ(s.kernels.size(), 3u);  // the module + two Triton kernels with source; no source-less copies
  for (const auto& k : s.kernels) {
    EXPECT_EQ(k.compile_id, "[0/0]");
    EXPECT_FALSE(k.source.empty());
  }
  ASSERT_EQ(s.runs.size(), 1u);

  int triton_gpu = 0, regions = 0;
  for (const auto& e : s.timeline) {
    if (e.category == "region") {
      ++regions;
      EXPECT_EQ(e.compile_id, "[0/0]");
    }
    if (e.category == "kernel" && e.name.rfind("triton_", 0) == 0) {
      ++triton_gpu;
      EXPECT_EQ(e.compile_id, "[0/0]");
      EXPECT_EQ(e.kernel, e.name);
    }
    if (e.name.rfind("## Call CompiledFxGraph", 0) == 0) EXPECT_EQ(e.compile_id, "[0/0]");
    if (e.category == "kernel" && e.correlation == 20) EXPECT_EQ(e.compile_id, "");  // eager cuBLAS, before any region
    if (e.category == "kernel" && e.correlation == 314) EXPECT_EQ(e.compile_id, "[0/0]");  // mm inside the region
  }
  EXPECT_EQ(regions, 3);
  EXPECT_EQ(triton_gpu, 6);
}

TEST(Join, DifferentProcessesStayApart) {
  importers::ImportRequest req;
  req.paths = {test::data("traces/breaky_dynamic.log"), test::data("traces/kineto_small_mlp.json")};
  auto result = importers::import_files(req);
  ASSERT_EQ(result.sessions.size(), 2u);
  ASSERT_EQ(result.not_joined.size(), 1u);
  EXPECT_NE(result.not_joined[0].find("1034"), std::string::npos);
  EXPECT_EQ(result.sessions[0].label, "breaky_dynamic");
  EXPECT_EQ(result.sessions[1].label, "kineto_small_mlp");
  for (const auto& k : result.sessions[0].session.kernels) EXPECT_FALSE(k.source.empty());
}

TEST(Join, ReusedCompileIdPicksTheCompileRunningAtTheTime) {
  session::Session s;
  for (int g = 1; g <= 2; ++g) {
    session::CompiledRegion r;
    r.compile_id = g == 1 ? "[0/0]" : "[0/0]#2";
    r.compile_ms = 10;
    r.metrics["start_time"] = g == 1 ? "100.0" : "200.0";
    s.regions.push_back(r);
    session::Kernel k;
    k.name = "triton_poi_fused_add_sin_0";
    k.compile_id = r.compile_id;
    k.source = "def k(): pass";
    s.kernels.push_back(k);
  }
  auto ev = [](int64_t t, const std::string& cat, const std::string& name, int64_t corr = -1) {
    session::TimelineEvent e;
    e.lane = cat == "kernel" ? "cuda:0/stream 7" : "host:1";
    e.category = cat;
    e.name = name;
    e.start_ns = t;
    e.dur_ns = cat == "region" ? 1000 : 10;
    e.correlation = corr;
    if (cat == "region") e.compile_id = "[0/0]";
    if (name.rfind("triton_", 0) == 0) e.kernel = name;
    return e;
  };
  int64_t t1 = 150'000'000'000, t2 = 250'000'000'000;
  s.timeline = {ev(t1, "region", "Torch-Compiled Region: 0/0"), ev(t1 + 5, "cuda_driver", "cuLaunchKernel", 1),
                ev(t1 + 50, "kernel", "triton_poi_fused_add_sin_0", 1), ev(t2, "region", "Torch-Compiled Region: 0/0"),
                ev(t2 + 5, "cuda_driver", "cuLaunchKernel", 2), ev(t2 + 50, "kernel", "triton_poi_fused_add_sin_0", 2)};
  importers::join_runtime_to_compile(s);
  EXPECT_EQ(s.timeline[0].compile_id, "[0/0]");
  EXPECT_EQ(s.timeline[1].compile_id, "[0/0]");
  EXPECT_EQ(s.timeline[2].compile_id, "[0/0]");
  EXPECT_EQ(s.timeline[3].compile_id, "[0/0]#2");
  EXPECT_EQ(s.timeline[5].compile_id, "[0/0]#2");
  EXPECT_EQ(s.regions[0].hits, 1);
  EXPECT_EQ(s.regions[1].hits, 1);
  auto again = s;
  importers::join_runtime_to_compile(again);  // idempotent
  EXPECT_EQ(again.timeline[5].compile_id, "[0/0]#2");
  EXPECT_EQ(again.regions[1].hits, 1);
}

TEST(Join, MergeShiftsRunIds) {
  session::Session a, b;
  a.runs.resize(2);
  a.runs[0].id = 0;
  a.runs[1].id = 1;
  b.runs.resize(1);
  b.runs[0].id = 0;
  session::TimelineEvent e;
  e.run = 0;
  b.timeline.push_back(e);
  b.origin = "profiler trace import";
  importers::merge_sessions(a, std::move(b));
  ASSERT_EQ(a.runs.size(), 3u);
  EXPECT_EQ(a.runs[2].id, 2);
  EXPECT_EQ(a.timeline[0].run, 2);
  EXPECT_EQ(a.origin, "profiler trace import");
}
