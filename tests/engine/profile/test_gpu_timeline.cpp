// Correlating CUPTI-like records with Kiln's host spans: recorded shapes of real traces (a
// generated kernel launched by cuLaunchKernel, a cuBLAS kernel inside an extern span, a CUDA graph
// replay whose kernels share the graph launch's correlation id), no GPU needed.
#include "engine/profile/gpu_timeline.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using namespace kiln::profile;

namespace {

HostSpan span(const char* cat, std::string name, int64_t start, int64_t dur, int depth, std::string kernel = "",
              std::string cid = "[0/0]") {
  HostSpan s;
  s.category = cat;
  s.name = std::move(name);
  s.start_ns = start;
  s.dur_ns = dur;
  s.depth = depth;
  s.kernel = std::move(kernel);
  s.compile_id = std::move(cid);
  return s;
}

GpuActivity api(const char* name, int64_t start, int64_t end, uint32_t corr, bool runtime = false) {
  GpuActivity a;
  a.kind = runtime ? GpuActivityKind::Runtime : GpuActivityKind::Driver;
  a.name = name;
  a.start_ns = start;
  a.end_ns = end;
  a.correlation = corr;
  return a;
}

GpuActivity kernel(const char* name, int64_t start, int64_t end, uint32_t corr, uint64_t graph_node = 0) {
  GpuActivity a;
  a.kind = GpuActivityKind::Kernel;
  a.name = name;
  a.start_ns = start;
  a.end_ns = end;
  a.correlation = corr;
  a.stream = 7;
  a.grid[0] = 128;
  a.block[0] = 256;
  a.registers = 32;
  a.graph_node = graph_node;
  a.graph_id = graph_node ? 3 : 0;
  return a;
}

// A CUDA graph's replay recorded whole (graph-level records), on stream 7.
GpuActivity graph_run(uint32_t graph, int64_t start, int64_t end, uint32_t corr) {
  GpuActivity a;
  a.kind = GpuActivityKind::Graph;
  a.name = "graph " + std::to_string(graph);
  a.start_ns = start;
  a.end_ns = end;
  a.stream = 7;
  a.correlation = corr;
  a.graph_id = graph;
  return a;
}

const kiln::records::TimelineEvent* find(const std::vector<kiln::records::TimelineEvent>& ev, const std::string& name,
                                         const std::string& category) {
  for (const auto& e : ev)
    if (e.name == name && e.category == category) return &e;
  return nullptr;
}

}  // namespace

TEST(GpuTimeline, LaunchesInsideKilnSpansNameTheirKernels) {
  std::vector<HostSpan> spans = {
      span("iteration", "iteration 0", 0, 1000, 0, "", ""),
      span("region", "region 0", 10, 900, 1),
      span("kernel", "k0_fused_add_relu", 20, 100, 2, "k0_fused_add_relu"),
      span("extern", "linear", 200, 300, 2, "linear_1"),
  };
  std::vector<GpuActivity> records = {
      api("cuLaunchKernel", 30, 60, 11),
      api("cudaLaunchKernel", 250, 270, 12, true),
      kernel("k0_fused_add_relu", 100, 180, 11),
      kernel("sm90_xmma_gemm_f32f32_tf32f32", 300, 500, 12),
  };
  GpuFigures f;
  auto ev = gpu_timeline(records, spans, {"k0_fused_add_relu"}, &f);
  ASSERT_EQ(ev.size(), records.size());
  auto* gen = find(ev, "k0_fused_add_relu", "kernel");
  ASSERT_NE(gen, nullptr);
  EXPECT_EQ(gen->kernel, "k0_fused_add_relu");
  EXPECT_EQ(gen->compile_id, "[0/0]");
  EXPECT_EQ(gen->lane, "cuda:0/stream 7");
  auto* gemm = find(ev, "sm90_xmma_gemm_f32f32_tf32f32", "kernel");
  ASSERT_NE(gemm, nullptr);
  EXPECT_EQ(gemm->kernel, "linear_1");  // the extern span that launched it
  auto args = nlohmann::json::parse(gemm->args_json);
  EXPECT_EQ(args["grid"][0], 128);
  EXPECT_EQ(args["registers"], 32);
  auto* call = find(ev, "cudaLaunchKernel", "cuda_runtime");
  ASSERT_NE(call, nullptr);
  EXPECT_EQ(call->lane, "cuda api");
  EXPECT_EQ(call->kernel, "linear_1");
  EXPECT_EQ(f.kernels, 2);
  EXPECT_EQ(f.attributed, 2);
  // Device busy 80 + 200 ns of a window from 0 to 1000 ns; one gap of 120 ns between them.
  EXPECT_EQ(f.window_ns, 1000);
  EXPECT_DOUBLE_EQ(f.busy_fraction, 0.28);
  EXPECT_DOUBLE_EQ(f.mean_gap_ms, 120e-6);
}

TEST(GpuTimeline, GraphReplayKernelsShareTheLaunchCorrelationAndMatchByName) {
  std::vector<HostSpan> spans = {span("region", "region 0 (graph replay)", 0, 100, 0)};
  std::vector<GpuActivity> records = {
      api("cudaGraphLaunch", 10, 40, 50, true),
      kernel("k0_fused_mul", 60, 90, 50, 1001),
      kernel("k1_sum", 95, 140, 50, 1002),
      kernel("void at::native::elementwise_kernel<...>", 141, 150, 50, 1003),
  };
  GpuFigures f;
  auto ev = gpu_timeline(records, spans, {"k0_fused_mul", "k1_sum"}, &f);
  EXPECT_EQ(find(ev, "k0_fused_mul", "kernel")->kernel, "k0_fused_mul");
  EXPECT_EQ(find(ev, "k1_sum", "kernel")->kernel, "k1_sum");
  // Not a Kiln kernel: linked to its region through the graph launch, with no kernel name.
  auto* other = find(ev, "void at::native::elementwise_kernel<...>", "kernel");
  EXPECT_EQ(other->kernel, "");
  EXPECT_EQ(other->compile_id, "[0/0]");
  EXPECT_EQ(f.graph_kernels, 3);
  EXPECT_EQ(nlohmann::json::parse(other->args_json)["graph_node"], 1003);
  // Overlapping and back-to-back device work: 60..90, 95..140, 141..150 → busy 30+45+9 over 0..150.
  EXPECT_NEAR(f.busy_fraction, 84.0 / 150.0, 1e-12);
  EXPECT_NEAR(f.mean_gap_ms, 3e-6, 1e-15);  // gaps of 5 and 1 ns
}

TEST(GpuTimeline, UnattributedRecordsStayVisible) {
  std::vector<GpuActivity> records = {kernel("stray", 5, 9, 99)};
  GpuActivity copy;
  copy.kind = GpuActivityKind::Memcpy;
  copy.name = "memcpy HtoD";
  copy.bytes = 4096;
  copy.start_ns = 10;
  copy.end_ns = 20;
  records.push_back(copy);
  GpuFigures f;
  auto ev = gpu_timeline(records, {}, {}, &f);
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].kernel, "");
  EXPECT_EQ(ev[1].category, "memcpy");
  EXPECT_EQ(nlohmann::json::parse(ev[1].args_json)["bytes"], 4096);
  EXPECT_EQ(f.kernels, 1);
  EXPECT_EQ(f.attributed, 0);
  EXPECT_NEAR(f.busy_fraction, 14.0 / 15.0, 1e-12);
}

// Device records whose launching calls left no record of their own (a launch API CUPTI was not asked to
// record): each is placed by the recorded calls around it in the launch order (correlation ids count
// calls), then in the innermost span holding both; here those calls come at the start and end of spans.
TEST(GpuTimeline, DeviceWorkBetweenRecordedCallsBelongsToTheSpanHoldingThem) {
  std::vector<HostSpan> spans = {
      span("region", "region 0", 10, 890, 0),
      span("kernel", "k0_fused_add_relu", 20, 100, 1, "k0_fused_add_relu"),
      span("extern", "linear", 200, 300, 1, "linear_1"),
  };
  std::vector<GpuActivity> records = {
      api("cuDriverGetVersion", 12, 13, 10),   // region starts
      api("cuDriverGetVersion", 205, 206, 20), // extern starts
      api("cuDriverGetVersion", 495, 496, 23), // extern ends
      api("cuDriverGetVersion", 890, 891, 30), // region ends
      kernel("k0_fused_add_relu", 100, 180, 15),
      kernel("sm90_xmma_gemm_f32f32_tf32f32", 300, 500, 21),
      kernel("void at::native::vectorized_elementwise_kernel<...>", 510, 520, 22),
      kernel("k1_sum", 600, 700, 25),
      kernel("before any fence", 1, 2, 5),
  };
  GpuFigures f;
  auto ev = gpu_timeline(records, spans, {"k0_fused_add_relu", "k1_sum"}, &f);
  EXPECT_EQ(find(ev, "sm90_xmma_gemm_f32f32_tf32f32", "kernel")->kernel, "linear_1");
  EXPECT_EQ(find(ev, "void at::native::vectorized_elementwise_kernel<...>", "kernel")->kernel, "linear_1");
  // Kiln's kernels: in the region (the fences around them are the region's and the extern's), by name.
  EXPECT_EQ(find(ev, "k0_fused_add_relu", "kernel")->kernel, "k0_fused_add_relu");
  EXPECT_EQ(find(ev, "k0_fused_add_relu", "kernel")->compile_id, "[0/0]");
  EXPECT_EQ(find(ev, "k1_sum", "kernel")->compile_id, "[0/0]");
  // Nothing recorded before it: not attributed, still shown.
  EXPECT_EQ(find(ev, "before any fence", "kernel")->compile_id, "");
  EXPECT_EQ(f.kernels, 5);
  EXPECT_EQ(f.attributed, 4);
}

// A CUDA graph recorded whole (graph-level records, kiln profile's window in the CUDA-graph modes): one
// device record per replay, on the stream's lane, attributed through the graph launch's correlation id to
// the region whose replay launched it, counted as busy device time and as a graph launch, not a kernel.
TEST(GpuTimeline, AGraphRecordedWholeIsDeviceWorkOfTheRegionThatReplayedIt) {
  std::vector<HostSpan> spans = {
      span("iteration", "iteration 0", 0, 1000, 0, "", ""),
      span("region", "region 0", 10, 900, 1, "", "[0/1]"),
      span("iteration", "iteration 1", 1000, 1000, 0, "", ""),
      span("region", "region 0", 1010, 900, 1, "", "[0/1]"),
  };
  std::vector<GpuActivity> records = {api("cuGraphLaunch", 20, 60, 21), api("cuGraphLaunch", 1020, 1060, 22),
                                      graph_run(5, 100, 700, 21), graph_run(5, 1100, 1700, 22)};
  GpuFigures f;
  auto ev = gpu_timeline(records, spans, {}, &f);
  int graphs = 0;
  for (const auto& e : ev) {
    if (e.category != "graph") continue;
    ++graphs;
    EXPECT_EQ(e.lane, "cuda:0/stream 7");
    EXPECT_EQ(e.compile_id, "[0/1]");
    EXPECT_EQ(e.dur_ns, 600);
    EXPECT_EQ(nlohmann::json::parse(e.args_json)["graph"], 5);
  }
  EXPECT_EQ(graphs, 2);
  EXPECT_EQ(f.graph_launches, 2);
  EXPECT_EQ(f.kernels, 0);
  EXPECT_NEAR(f.busy_fraction, 1200.0 / 2000.0, 1e-9);
  EXPECT_NEAR(f.mean_gap_ms, 400e-6, 1e-12);
}

// kiln profile's kernel-detail iterations run milliseconds after the window (the CUDA graphs recorded again in
// between, untraced): they are drawn right after it, host spans and device records moved by one amount.
TEST(GpuTimeline, DetailIterationsAreDrawnRightAfterTheWindow) {
  std::vector<HostSpan> detail = {span("detail", "kernel detail 0", 15000000, 400000, 0),
                                  span("region", "region 0", 15010000, 300000, 1, "", "[0/0]")};
  std::vector<GpuActivity> records = {kernel("k0_fused_mul", 15020000, 15030000, 7, 1001),
                                      kernel("k1_sum", 15400000, 15420000, 7, 1002)};
  const int64_t moved = move_next_to_window(1000000, 50000, detail, records);
  EXPECT_EQ(moved, 15000000 - 1050000);
  EXPECT_EQ(detail[0].start_ns, 1050000) << "the first detail event starts 50 µs after the window";
  EXPECT_EQ(detail[1].start_ns, 1060000);
  EXPECT_EQ(detail[0].dur_ns, 400000);
  EXPECT_EQ(records[0].start_ns, 1070000);
  EXPECT_EQ(records[0].end_ns, 1080000);
  EXPECT_EQ(records[1].end_ns - records[1].start_ns, 20000) << "durations unchanged";
  // Already close (or overlapping): nothing moves.
  EXPECT_EQ(move_next_to_window(1030000, 50000, detail, records), 0);
  EXPECT_EQ(detail[0].start_ns, 1050000);
  std::vector<HostSpan> none;
  std::vector<GpuActivity> no_records;
  EXPECT_EQ(move_next_to_window(0, 50000, none, no_records), 0);
}

// A trace's records outside the iterations it keeps (a call made aside before them, iterations only timed
// after them) are dropped; a record starting exactly at the end belongs to what comes after.
TEST(GpuTimeline, RecordsOutsideTheKeptIterationsAreDropped) {
  std::vector<GpuActivity> records = {kernel("aside", 100, 200, 7, 1), kernel("k0", 1000, 1100, 7, 2),
                                      kernel("k1", 1900, 2100, 7, 3), kernel("timed", 2000, 2050, 7, 4)};
  keep_records_between(records, 1000, 2000);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].name, "k0");
  EXPECT_EQ(records[1].name, "k1") << "kept by where it starts, though it ends after";
  keep_records_between(records, 1500);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].name, "k1");
}
