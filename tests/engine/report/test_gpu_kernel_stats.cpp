// GPU time per kernel from device records only: totals equal the sum of the session's device
// records, host spans and launch API events never count as kernel time, every device kernel
// (cuBLAS/cuDNN/Triton/Kiln) is a row with what launched it.
#include "engine/report/gpu_kernel_stats.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "engine/base/error.h"
#include "engine/importers/kineto/kineto.h"
#include "engine/report/render_html.h"
#include "engine/report/render_markdown.h"
#include "engine/session/store.h"
#include "tests/support/paths.h"

using namespace kiln;

namespace {

int64_t device_sum(const session::Session& s, int run, int64_t* records = nullptr) {
  int64_t sum = 0, n = 0;
  for (const auto& e : s.timeline)
    if (e.run == run && e.lane.rfind("cuda:", 0) == 0 && e.category == "kernel") {
      sum += e.dur_ns;
      ++n;
    }
  if (records) *records = n;
  return sum;
}

int64_t row_sum(const report::KernelStats& st) {
  int64_t sum = 0;
  for (const auto& k : st.kernels) sum += k.total_ns;
  return sum;
}

session::TimelineEvent event(int run, const std::string& lane, const std::string& category, const std::string& name,
                             int64_t start, int64_t dur, int64_t correlation = -1, const std::string& kernel = "") {
  session::TimelineEvent e;
  e.run = run;
  e.lane = lane;
  e.category = category;
  e.name = name;
  e.start_ns = start;
  e.dur_ns = dur;
  e.correlation = correlation;
  e.kernel = kernel;
  return e;
}

}  // namespace

TEST(GpuKernelStats, EveryRunOfTheBundledH100SessionSumsToItsDeviceRecords) {
  auto s = session::load_session(test::example("sessions/block_h100.kiln"));
  ASSERT_FALSE(s.runs.empty());
  for (const auto& r : s.runs) {
    SCOPED_TRACE(r.mode + "/" + r.backend);
    int64_t records = 0;
    const int64_t sum = device_sum(s, r.id, &records);
    auto st = report::kernel_stats(s, r.id);
    EXPECT_EQ(st.time_source, "device");
    EXPECT_EQ(st.total_ns, sum);
    EXPECT_EQ(st.records, records);
    EXPECT_EQ(row_sum(st), sum);
    EXPECT_EQ(st.iterations, 3);  // the traced window
    double share = 0;
    for (size_t i = 0; i < st.kernels.size(); ++i) {
      share += st.kernels[i].share;
      if (i > 0) EXPECT_GE(st.kernels[i - 1].total_ns, st.kernels[i].total_ns);  // longest first
    }
    EXPECT_NEAR(share, 1.0, 1e-9);
  }
  // The default run: every Kiln kernel launches once per iteration, the GEMMs are cuBLAS kernels
  // launched by the extern calls of aten::linear / aten::matmul.
  auto st = report::kernel_stats(s, report::find_run(s, "default"));
  int kiln = 0, cublas = 0;
  for (const auto& k : st.kernels) {
    if (k.launcher == "kiln kernel") {
      ++kiln;
      EXPECT_EQ(k.name, k.launched_by);
      EXPECT_DOUBLE_EQ(k.launches_per_iter, 1.0) << k.name;
    }
    if (k.name.find("gemm") != std::string::npos) {
      ++cublas;
      EXPECT_EQ(k.launcher, "extern") << k.name;
      EXPECT_EQ(k.launched_by.rfind("aten::", 0), 0u) << k.launched_by;
    }
  }
  EXPECT_EQ(kiln, 7);
  EXPECT_GE(cublas, 2);
  // A CUDA graph replays its kernels without one launch call each: said so, not guessed.
  auto ro = report::kernel_stats(s, report::find_run(s, "reduce-overhead"));
  ASSERT_FALSE(ro.kernels.empty());
  EXPECT_EQ(ro.kernels[0].launcher, "CUDA graph replay");
  // Kiln's max-autotune replays a CUDA graph too: its library kernels (cuBLAS) are not left unattributed.
  auto ma = report::kernel_stats(s, report::find_run(s, "max-autotune"));
  ASSERT_FALSE(ma.kernels.empty());
  for (const auto& k : ma.kernels)
    if (k.name.find("gemm") != std::string::npos) EXPECT_EQ(k.launcher, "CUDA graph replay") << k.name;
}

TEST(GpuKernelStats, AnImportedKinetoTraceCountsEveryGpuKernelOnceAndNamesItsOp) {
  auto s = importers::import_kineto_trace(test::data("traces/kineto_small_mlp.json"));
  const int run = s.runs.empty() ? -1 : s.runs.front().id;
  int64_t records = 0;
  const int64_t sum = device_sum(s, run, &records);
  auto st = report::kernel_stats(s, run);
  ASSERT_GT(records, 0);
  EXPECT_EQ(st.total_ns, sum);
  EXPECT_EQ(row_sum(st), sum);
  EXPECT_EQ(st.iterations, 3);  // three calls of the compiled region
  // The GEMMs (cuBLAS, CUTLASS) are listed and take most of the time; the Triton kernels are 1 launch per call.
  ASSERT_FALSE(st.kernels.empty());
  EXPECT_EQ(st.kernels[0].launched_by, "aten::mm");
  EXPECT_EQ(st.kernels[0].launcher, "op");
  int triton = 0;
  for (const auto& k : st.kernels)
    if (k.name.rfind("triton_", 0) == 0) {
      ++triton;
      EXPECT_EQ(k.launcher, "compiled kernel");
      EXPECT_DOUBLE_EQ(k.launches_per_iter, 1.0);
      EXPECT_LT(k.share, 0.1) << k.name;  // a few µs of a 130 µs iteration, not 58 %
    }
  EXPECT_EQ(triton, 2);
}

TEST(GpuKernelStats, HostSpansAndLaunchCallsAreNotKernelTime) {
  session::Session s;
  s.origin = "kiln profile";
  session::Run r;
  r.id = 4;
  r.mode = "default";
  r.backend = "kiln";
  s.runs = {r};
  session::Kernel k;
  k.name = "k0_add";
  k.compile_id = "[0/0]";
  s.kernels = {k};
  for (int it = 0; it < 2; ++it) {
    const int64_t t = it * 10000;
    s.timeline.push_back(event(4, "host:1", "iteration", "iteration", t, 9000));
    // Kiln's kernel: a host launch span and a runtime API call that name it, and one device record.
    s.timeline.push_back(event(4, "host:1", "kernel", "k0_add", t + 100, 2000, -1, "k0_add"));
    s.timeline.push_back(event(4, "cuda api", "cuda_runtime", "cuLaunchKernel", t + 200, 500, 10 + it, "k0_add"));
    s.timeline.push_back(event(4, "cuda:0/stream 7", "kernel", "k0_add", t + 800, 300, 10 + it, "k0_add"));
    // An extern call whose cuBLAS kernel names no launcher: found through the launch call's correlation.
    s.timeline.push_back(event(4, "host:1", "extern", "aten::linear", t + 3000, 4000));
    s.timeline.push_back(event(4, "aten ops", "cpu_op", "aten::linear", t + 3100, 3800));
    s.timeline.push_back(event(4, "aten ops", "cpu_op", "aten::addmm", t + 3200, 3000));
    s.timeline.push_back(event(4, "cuda api", "cuda_runtime", "cudaLaunchKernel", t + 3300, 400, 20 + it));
    s.timeline.push_back(event(4, "cuda:0/stream 7", "kernel", "sgemm_128x64", t + 4000, 1000, 20 + it));
  }
  auto st = report::kernel_stats(s, 4);
  EXPECT_EQ(st.time_source, "device");
  EXPECT_EQ(st.iterations, 2);
  EXPECT_EQ(st.records, 4);
  EXPECT_EQ(st.total_ns, 2 * (300 + 1000));
  ASSERT_EQ(st.kernels.size(), 2u);
  EXPECT_EQ(st.kernels[0].name, "sgemm_128x64");
  EXPECT_EQ(st.kernels[0].launched_by, "aten::addmm");  // the innermost op around the launch call
  EXPECT_EQ(st.kernels[0].launcher, "op");
  EXPECT_DOUBLE_EQ(st.kernels[0].launches_per_iter, 1.0);
  EXPECT_DOUBLE_EQ(st.kernels[0].mean_ns, 1000);
  EXPECT_EQ(st.kernels[1].launched_by, "k0_add");
  EXPECT_EQ(st.kernels[1].launcher, "kiln kernel");
  auto lt = report::launcher_time(st, k);
  EXPECT_EQ(lt.total_ns, 600);
  EXPECT_DOUBLE_EQ(lt.launches_per_iter, 1.0);
  // Host cost is its own table, by kind of span.
  bool runtime = false;
  for (const auto& h : st.host)
    if (h.category == "cuda_runtime") {
      runtime = true;
      EXPECT_EQ(h.calls, 4);
      EXPECT_EQ(h.total_ns, 2 * (500 + 400));
    }
  EXPECT_TRUE(runtime);

  // Markdown: top N then one line for the rest; JSON keeps every row.
  auto md = report::render_kernel_stats_markdown(s, st, 1);
  EXPECT_NE(md.find("| 1 | `sgemm_128x64` | `aten::addmm` (op) | 1.0 | 0.001 | 1.00 | 1.00 | 1.00 | 76.9% |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| | 1 more kernels |"), std::string::npos) << md;
  auto j = nlohmann::json::parse(report::render_kernel_stats_json(s, st));
  EXPECT_EQ(j["kernels"].size(), 2u);
  EXPECT_EQ(j["total_ns"], 2600);
}

TEST(GpuKernelStats, OnTheCpuKilnsKernelSpansAreTheKernelTime) {
  session::Session s;
  session::Run r;
  r.id = 0;
  r.mode = "default";
  r.backend = "kiln";
  s.runs = {r};
  s.timeline.push_back(event(0, "host:1", "kernel", "k0_add", 0, 500, -1, "k0_add"));
  s.timeline.push_back(event(0, "host:1", "extern", "aten::linear", 600, 1500));
  s.timeline.push_back(event(0, "host:1", "guard", "guards [0/0]", 2200, 50));
  auto st = report::kernel_stats(s, 0);
  EXPECT_EQ(st.time_source, "host");
  EXPECT_EQ(st.total_ns, 2000);
  ASSERT_EQ(st.kernels.size(), 2u);
  EXPECT_EQ(st.kernels[0].name, "aten::linear");
  EXPECT_EQ(st.kernels[0].launcher, "extern");
}

TEST(GpuKernelStats, RunsAreNamedByModeBackendOrPeer) {
  auto s = session::load_session(test::example("sessions/block_h100.kiln"));
  EXPECT_EQ(s.runs.at(static_cast<size_t>(report::find_run(s, "eager"))).mode, "eager");
  const int peer = report::find_run(s, "cudagraphs");
  for (const auto& r : s.runs)
    if (r.id == peer) EXPECT_EQ(r.backend, "cudagraphs");
  EXPECT_EQ(report::find_run(s, "default/torchscript"), report::find_run(s, "torchscript"));
  try {
    report::find_run(s, "fastest");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no run 'fastest'"), std::string::npos) << e.what();
  }
}

// A run that is not there is one line however many runs the session holds (an imported trace has one per
// profiler step) and however long their names.
TEST(GpuKernelStats, AnUnknownRunIsOneShortLineWhateverTheSessionHolds) {
  session::Session s;
  for (int i = 0; i < 5000; ++i) {
    session::Run r;
    r.id = i;
    r.mode = i == 3 ? std::string(1 << 20, 'm') : "ProfilerStep#" + std::to_string(i);
    r.backend = "torch.compile";
    s.runs.push_back(r);
  }
  try {
    report::find_run(s, "fastest");
    FAIL();
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_LT(m.size(), 1000u) << m.substr(0, 2000);
    EXPECT_NE(m.find("no run 'fastest' (this session has: ProfilerStep#0/torch.compile, "), std::string::npos) << m;
    EXPECT_NE(m.find(std::string(60, 'm') + "…"), std::string::npos) << m;
    EXPECT_NE(m.find(" and 4992 more; name a mode"), std::string::npos) << m;
  }
}

TEST(GpuKernelStats, ReportsShowTheTopTenByGpuTimeAndFoldTheRest) {
  auto s = session::load_session(test::example("sessions/block_h100.kiln"));
  auto html = report::render_html(s);
  EXPECT_NE(html.find("GPU time per kernel: reduce-overhead / kiln"), std::string::npos);
  EXPECT_NE(html.find("<details><summary>1 more kernels</summary>"), std::string::npos);
  auto md = report::render_markdown(s);
  EXPECT_NE(md.find("## GPU time per kernel: reduce-overhead / kiln"), std::string::npos);
  EXPECT_NE(md.find("| | 1 more kernels |"), std::string::npos);
  EXPECT_LT(md.find("**Verdict:**"), md.find("## GPU time per kernel"));
}

// An imported profiler step shows twice, as the host's ProfilerStep span and as its mirror on the GPU
// lane (a gpu_user_annotation): one iteration, not two (counting both halved every per-iteration time).
TEST(GpuKernelStats, AProfilerStepMirroredOnTheGpuLaneIsOneIteration) {
  session::Session s;
  s.origin = "profiler trace import";
  session::Run r;
  r.id = 0;
  r.mode = "ProfilerStep#1";
  r.backend = "torch.compile";
  s.runs = {r};
  s.timeline.push_back(event(0, "host:1", "step", "ProfilerStep#1", 0, 10000));
  s.timeline.push_back(event(0, "cuda:0/stream 7", "step", "ProfilerStep#1", 500, 9000));
  s.timeline.push_back(event(0, "cuda:0/stream 7", "kernel", "sgemm", 1000, 4000, 7));
  auto recs = report::kernel_records(s, 0);
  EXPECT_EQ(recs.iterations, 1);
  auto k = report::kernel_stats(s, 0);
  EXPECT_EQ(k.total_ns, 4000);
}

// A session recorded on an H200 (kiln profile block.pt, every mode): its device records sum as the H100's do,
// and max-autotune's timed products are kernel records whose autotune tables hold each race as it was run —
// LibTorch's product and cuBLASLt's candidates, each with its device time or why it was not timed, one kept
// per problem — and the reports show the kept one.
TEST(GpuKernelStats, TheBundledH200SessionShowsEachTimedProductsRace) {
  auto s = session::load_session(test::example("sessions/block_h200.kiln"));
  for (const auto& r : s.runs) {
    SCOPED_TRACE(r.mode + "/" + r.backend);
    const int64_t sum = device_sum(s, r.id);
    auto st = report::kernel_stats(s, r.id);
    EXPECT_EQ(st.total_ns, sum);
    EXPECT_EQ(row_sum(st), sum);
  }
  int products = 0;
  for (const auto& k : s.kernels) {
    if (k.name.rfind("product_", 0) != 0) continue;
    ++products;
    SCOPED_TRACE(k.name);
    EXPECT_EQ(k.language, "cublas");
    ASSERT_GE(k.autotune.size(), 2u);
    const std::string problem = k.autotune[0].config.substr(0, k.autotune[0].config.find(": "));
    EXPECT_EQ(k.autotune[0].config, problem + ": LibTorch's product (cublasGemmEx)");
    int kept = 0;
    for (const auto& c : k.autotune) {
      EXPECT_EQ(c.config.rfind(problem + ": ", 0), 0u) << c.config;  // one problem: the region's shapes are fixed
      EXPECT_TRUE(c.ms > 0 || c.config.find(" - ") != std::string::npos) << c.config;
      kept += c.chosen;
    }
    EXPECT_EQ(kept, 1);
  }
  EXPECT_EQ(products, 4) << "block.pt's four linears, their bias left to the kernels that read them";
  const std::string md = report::render_markdown(s);
  EXPECT_NE(md.find("| `product_linear_1` |"), std::string::npos);
  EXPECT_NE(md.find("cuBLASLt algorithm"), std::string::npos);
  const std::string html = report::render_html(s);
  EXPECT_NE(html.find("LibTorch&#39;s product (cublasGemmEx)"), std::string::npos);
  // Generated kernels unfold their source; a product's record, which has none, offers nothing to unfold.
  const size_t row = html.find("<code>product_linear_1</code>");
  ASSERT_NE(row, std::string::npos);
  EXPECT_EQ(html.compare(row + std::string("<code>product_linear_1</code>").size(), 5, "</td>"), 0);
  EXPECT_NE(html.find("<summary class=muted>source</summary>"), std::string::npos);
}
