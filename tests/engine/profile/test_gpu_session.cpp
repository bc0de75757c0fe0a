// A session recorded by `kiln profile` on an H100 (tests/data/sessions/mlp_b64_h100.kiln, the
// MLP 1024-4096-1024 at batch 64, every mode): what CUPTI tracing left in it, read back through
// the store and the JSON report, without a GPU.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <map>
#include <set>

#include "engine/report/render_json.h"
#include "engine/session/store.h"
#include "tests/support/paths.h"

using namespace kiln;

namespace {
bool args_has_graph_node(const session::TimelineEvent& e) {
  return nlohmann::json::parse(e.args_json).contains("graph_node");
}
session::Session gpu_session() { return session::load_session(test::data("sessions/mlp_b64_h100.kiln")); }
}  // namespace

TEST(GpuSession, EveryModeRanOnTheGpuWithDeviceFigures) {
  auto s = gpu_session();
  ASSERT_EQ(s.runs.size(), 6u);
  std::set<std::string> modes;
  for (const auto& r : s.runs) {
    EXPECT_EQ(r.status, "ok") << r.mode << "/" << r.backend;
    EXPECT_EQ(r.device, "cuda:0");
    EXPECT_GT(r.gpu_busy, 0.0) << r.mode;
    EXPECT_LE(r.gpu_busy, 1.0) << r.mode;
    EXPECT_GT(r.launch_gap_ms, 0.0) << r.mode;
    EXPECT_GT(r.peak_memory_bytes, 0) << r.mode;
    modes.insert(r.mode);
  }
  EXPECT_EQ(modes, (std::set<std::string>{"eager", "default", "reduce-overhead", "max-autotune"}));
  EXPECT_NE(s.env.gpu.find("H100"), std::string::npos);
}

TEST(GpuSession, DeviceKernelsAreCorrelatedToKilnKernelsAndGraphReplays) {
  auto s = gpu_session();
  std::set<std::string> kiln_kernels;
  for (const auto& k : s.kernels) kiln_kernels.insert(k.name);
  std::map<int, const session::Run*> runs;
  for (const auto& r : s.runs) runs[r.id] = &r;
  int generated = 0, graph_kernels = 0, dropped = -1;
  for (const auto& e : s.timeline) {
    const auto* run = runs.at(e.run);
    if (e.category == "kernel" && e.lane.rfind("cuda:0/stream ", 0) == 0) {
      EXPECT_GE(e.correlation, 0);
      if (kiln_kernels.count(e.name)) {
        ++generated;
        EXPECT_EQ(e.kernel, e.name);  // a generated kernel is found by its own name
        // Launched directly (not replayed): the launch lies inside the region's span, which names the entry.
        if (!args_has_graph_node(e)) EXPECT_EQ(e.compile_id, "[0/0]") << e.name;
      }
      auto args = nlohmann::json::parse(e.args_json);
      EXPECT_GT(args["block"][0].get<int>(), 0);
      if (args.contains("graph_node")) {
        ++graph_kernels;
        EXPECT_TRUE(run->mode == "reduce-overhead" || run->mode == "max-autotune" || run->backend == "cudagraphs")
            << run->mode << "/" << run->backend;
      }
    }
    if (e.category == "profiler") {
      auto args = nlohmann::json::parse(e.args_json);
      EXPECT_FALSE(args.contains("error"));
      dropped = std::max(dropped, args["dropped_records"].get<int>());
      EXPECT_GT(args["cupti_records"].get<int>(), 0);
      EXPECT_GT(args["traced_median_ms"].get<double>(), 0.0);
    }
  }
  EXPECT_GT(generated, 0);
  EXPECT_GT(graph_kernels, 0);
  EXPECT_EQ(dropped, 0);
}

TEST(GpuSession, ReportJsonCarriesTheSameDeviceFigures) {
  auto s = gpu_session();
  auto j = nlohmann::json::parse(report::render_json(s));
  ASSERT_EQ(j["runs"].size(), s.runs.size());
  for (size_t i = 0; i < s.runs.size(); ++i) {
    EXPECT_DOUBLE_EQ(j["runs"][i]["gpu_busy"].get<double>(), s.runs[i].gpu_busy);
    EXPECT_DOUBLE_EQ(j["runs"][i]["launch_gap_ms"].get<double>(), s.runs[i].launch_gap_ms);
  }
}
