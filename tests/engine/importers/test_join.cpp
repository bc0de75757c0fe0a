// Joining a TORCH_TRACE log and a profiler trace of the same process: runtime regions and Triton
// kernels find their compile id and generated source; unrelated processes stay apart.
#include <gtest/gtest.h>

#include <random>

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

// The join's passes run in parts on a large timeline: the same session whatever the number of parts.
// A random timeline of two processes' worth of lanes: region spans of compile ids compiled twice
// (after a reset) on two host lanes, host events inside and outside them, launches and the GPU
// kernels they launched (Triton kernels with and without generated source, profiler-only kernel
// records whose launches agree on a compile id or not), in trace order.
TEST(Join, PartsGiveTheSameSessionAsOnePass) {
  std::mt19937 rng(7);
  session::Session base;
  for (int frame = 0; frame < 3; ++frame) {
    for (int g = 1; g <= 2; ++g) {
      session::CompiledRegion r;
      r.compile_id = "[" + std::to_string(frame) + "/0]" + (g == 1 ? "" : "#2");
      r.metrics["start_time"] = g == 1 ? "100.0" : "200.0";
      base.regions.push_back(r);
      session::Kernel k;
      k.name = "triton_poi_fused_" + std::to_string(frame);
      k.compile_id = r.compile_id;
      k.source = "def k(): pass";
      base.kernels.push_back(k);
    }
    session::CompiledRegion profiler_only;  // the profiler's record of the same compile: merged away
    profiler_only.compile_id = "[" + std::to_string(frame) + "/0]";
    profiler_only.metrics["from"] = "profiler trace";
    base.regions.push_back(profiler_only);
  }
  for (const char* name : {"triton_red_agreed", "triton_red_disputed", "triton_poi_fused_1"}) {
    session::Kernel k;  // source-less (a profiler's record)
    k.name = name;
    base.kernels.push_back(k);
  }
  int64_t t = 150'000'000'000;
  int64_t correlation = 1;
  for (int span = 0; span < 900; ++span) {
    if (span == 450) t = 250'000'000'000;  // after the second compiles started
    const std::string lane = rng() % 3 ? "host:1" : "host:2";
    session::TimelineEvent region;
    region.lane = lane;
    region.category = "region";
    const int frame = static_cast<int>(rng() % 3);
    region.name = "Torch-Compiled Region: " + std::to_string(frame) + "/0";
    region.compile_id = rng() % 10 ? "[" + std::to_string(frame) + "/0]" : "";
    region.start_ns = t;
    region.dur_ns = 1000;
    base.timeline.push_back(region);
    for (int k = 0; k < 4; ++k) {
      session::TimelineEvent launch;
      launch.lane = rng() % 5 ? lane : "host:3";  // now and then on a lane with no region
      launch.category = "cuda_runtime";
      launch.name = "cudaLaunchKernel";
      launch.start_ns = t + 100 * k + (rng() % 2 ? 0 : 2000);  // some after the span ended
      launch.dur_ns = 10;
      // Now and then a correlation seen long before (the first launch of one counts); never one of the
      // first launches of a span (correlation 4 * span + 1), whose kernels are the "agreed" ones.
      launch.correlation = correlation;
      if (span > 100 && rng() % 50 == 0) {
        launch.correlation = correlation - 300 - static_cast<int64_t>(rng() % 50);
        if ((launch.correlation - 1) % 4 == 0) --launch.correlation;
      }
      base.timeline.push_back(launch);
      session::TimelineEvent kernel;
      kernel.lane = "cuda:0/stream 7";
      kernel.category = "kernel";
      // Profiler-only kernels: "agreed" launched from frame 2's first compile only, "disputed" from frame
      // 0's first compile, then from frame 1's second (each part alone may see one compile id only).
      const char* names[] = {"triton_poi_fused_0", "triton_poi_fused_1", "gemm"};
      kernel.name = names[rng() % 3];
      if (frame == 2 && span < 450 && k == 0) kernel.name = "triton_red_agreed";
      if (k == 1 && ((frame == 0 && span < 450) || (frame == 1 && span >= 450))) kernel.name = "triton_red_disputed";
      if (kernel.name.rfind("triton_", 0) == 0) kernel.kernel = kernel.name;
      kernel.start_ns = launch.start_ns + 50;
      kernel.dur_ns = 30;
      kernel.correlation = rng() % 8 ? launch.correlation : -1;
      base.timeline.push_back(kernel);
      ++correlation;
    }
    t += 5000;
  }
  ASSERT_GT(base.timeline.size(), 8000u);
  session::Session one = base;
  importers::join_runtime_to_compile(one, 1);
  int with_id = 0;
  for (const auto& e : one.timeline) with_id += !e.compile_id.empty();
  EXPECT_GT(with_id, 2000);  // the join did something to compare
  for (const auto& k : one.kernels) {
    if (k.name == "triton_red_agreed") EXPECT_EQ(k.compile_id, "[2/0]");
    if (k.name == "triton_red_disputed") EXPECT_EQ(k.compile_id, "");
  }
  for (unsigned parts : {2u, 3u, 7u}) {
    session::Session split = base;
    importers::join_runtime_to_compile(split, parts);
    ASSERT_EQ(split.timeline.size(), one.timeline.size());
    for (size_t i = 0; i < one.timeline.size(); ++i)
      ASSERT_EQ(split.timeline[i].compile_id, one.timeline[i].compile_id) << parts << " parts, event " << i;
    ASSERT_EQ(split.kernels.size(), one.kernels.size());
    for (size_t i = 0; i < one.kernels.size(); ++i) {
      EXPECT_EQ(split.kernels[i].name, one.kernels[i].name);
      EXPECT_EQ(split.kernels[i].compile_id, one.kernels[i].compile_id) << split.kernels[i].name;
    }
    ASSERT_EQ(split.regions.size(), one.regions.size());
    for (size_t i = 0; i < one.regions.size(); ++i) {
      EXPECT_EQ(split.regions[i].hits, one.regions[i].hits) << one.regions[i].compile_id;
      EXPECT_EQ(split.regions[i].metrics, one.regions[i].metrics) << one.regions[i].compile_id;
    }
  }
}
