// GPU tests (label "gpu"): profiling on the device attributes kernels to their launches and modules; exported programs (.pt2) on the CUDA device in every mode, against the outputs torch
// itself recorded when it exported them (the .io.pt beside each program, written by bench/export/make_exported.py).
// The committed miniatures (tests/data/pt2) always; KILN_PT2_DIRS (directories separated by ':') adds programs
// exported elsewhere: the full-size corpus, and models Kiln was not built with. Each program prints one line per
// mode (error against torch's outputs, or the error that stopped it), so a run over many programs is a table.
// KILN_PT2_ONLY (names separated by ',') and KILN_PT2_MODES (modes separated by ',') narrow a run, so each program
// can run in a process of its own (a device fault poisons the process's CUDA context for every later program).
// Without a GPU each test skips and says why.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include <torch/script.h>

#include "engine/base/error.h"
#include "engine/commands/profile_model.h"
#include "engine/report/gpu_kernel_stats.h"
#include "engine/report/module_time.h"
#include "engine/model/model_impl.h"
#include "engine/runtime/captured_runtime.h"
#include "engine/runtime/compare_values.h"
#include "engine/runtime/float_precision.h"
#include "tests/support/gpu.h"
#include "tests/support/paths.h"

using namespace kiln;

namespace {

using test::why_no_gpu;

std::vector<std::string> env_list(const char* name) {
  std::vector<std::string> out;
  if (const char* v = std::getenv(name)) {
    std::stringstream in(v);
    for (std::string x; std::getline(in, x, ',');)
      if (!x.empty()) out.push_back(x);
  }
  return out;
}

std::vector<std::string> program_dirs() {
  std::vector<std::string> dirs{test::data("pt2")};
  if (const char* extra = std::getenv("KILN_PT2_DIRS")) {
    std::stringstream in(extra);
    for (std::string d; std::getline(in, d, ':');)
      if (!d.empty()) dirs.push_back(d);
  }
  return dirs;
}

// One call's inputs and torch's outputs, from a program's .io.pt: calls hold `per_call` inputs each, in turn.
struct Call {
  std::vector<at::Tensor> inputs;
  std::vector<at::Tensor> outputs;
};

std::vector<Call> recorded_calls(const std::string& io_path, int calls) {
  auto io = torch::jit::load(io_path);
  std::vector<at::Tensor> ins, outs;
  for (int i = 0; io.hasattr("input" + std::to_string(i)); ++i) ins.push_back(io.attr("input" + std::to_string(i)).toTensor());
  for (int i = 0; io.hasattr("output" + std::to_string(i)); ++i) outs.push_back(io.attr("output" + std::to_string(i)).toTensor());
  std::vector<Call> out(static_cast<size_t>(std::max(calls, 1)));
  const size_t per_in = ins.size() / out.size(), per_out = outs.size() / out.size();
  for (size_t c = 0; c < out.size(); ++c) {
    for (size_t k = 0; k < per_in; ++k) out[c].inputs.push_back(ins[c * per_in + k].to(torch::kCUDA));
    for (size_t k = 0; k < per_out; ++k) out[c].outputs.push_back(outs[c * per_out + k]);
  }
  return out;
}

// The flat tensor leaves of a result (a tensor, or a tuple/list of them).
std::vector<at::Tensor> leaves(const c10::IValue& v) {
  if (v.isTensor()) return {v.toTensor()};
  std::vector<at::Tensor> out;
  if (v.isTuple())
    for (const auto& e : v.toTupleRef().elements())
      for (auto& t : leaves(e)) out.push_back(t);
  if (v.isList())
    for (const auto& e : v.toListRef())
      for (auto& t : leaves(e)) out.push_back(t);
  return out;
}

// The worst error of `got` against torch's outputs under the tolerance rule ("" when it matches).
std::string mismatch(const std::vector<at::Tensor>& got, const std::vector<at::Tensor>& want, bool tf32, double& max_rel) {
  if (got.size() != want.size())
    return std::to_string(got.size()) + " outputs where torch recorded " + std::to_string(want.size());
  std::string problem;
  for (size_t i = 0; i < got.size(); ++i) {
    auto err = runtime::compare_to_eager(got[i].cpu(), want[i], tf32);
    max_rel = std::max(max_rel, err.max_rel);
    if (!err.ok && problem.empty())
      problem = "output " + std::to_string(i) + ": max rel " + std::to_string(err.max_rel) + " " + err.problem;
  }
  return problem;
}

}  // namespace

TEST(GpuExported, ProgramsMatchTheOutputsTorchRecordedInEveryMode) {
  if (auto why = why_no_gpu(); !why.empty()) GTEST_SKIP() << "no GPU here: " << why;
  torch::NoGradGuard no_grad;
  const auto only = env_list("KILN_PT2_ONLY");
  auto modes = env_list("KILN_PT2_MODES");
  if (modes.empty()) modes = {"default", "reduce-overhead", "max-autotune"};
  int programs = 0;
  for (const auto& dir : program_dirs()) {
    std::ifstream in(dir + "/manifest.json");
    ASSERT_TRUE(in) << dir << ": no manifest.json";
    const auto manifest = nlohmann::json::parse(in);
    for (const auto& e : manifest["models"]) {
      const std::string name = e.value("name", "?");
      if (!only.empty() && std::find(only.begin(), only.end(), name) == only.end()) continue;
      if (e.contains("error")) {
        std::cout << "[pt2] " << dir << " " << name << ": not exported: " << e["error"].get<std::string>().substr(0, 160)
                  << "\n";
        continue;
      }
      const std::string path = dir + "/" + e.value("file", name + ".pt2");
      ++programs;
      std::optional<model::Model> m;
      std::vector<Call> calls;
      try {
        m = model::load_model(path, "cuda");
        calls = recorded_calls(dir + "/" + name + ".io.pt", e.value("calls", 1));
      } catch (const std::exception& ex) {
        ADD_FAILURE() << path << ": " << ex.what();
        std::cout << "[pt2] " << name << " load: FAIL " << ex.what() << "\n";
        continue;
      }
      const bool tf32 = runtime::tf32_in_effect(*m);
      // The program as read (LibTorch running its graph) against torch's own run of the module.
      {
        double rel = 0;
        std::string problem;
        try {
          auto module = m->impl->module;
          for (const auto& c : calls) {
            std::vector<c10::IValue> args(c.inputs.begin(), c.inputs.end());
            auto p = mismatch(leaves(module.forward(args)), c.outputs, tf32, rel);
            if (problem.empty()) problem = p;
          }
        } catch (const std::exception& ex) {
          problem = ex.what();
        }
        EXPECT_TRUE(problem.empty()) << path << " as read: " << problem;
        std::cout << "[pt2] " << name << " eager: " << (problem.empty() ? "ok" : "FAIL " + problem.substr(0, 200))
                  << " max rel " << rel << (tf32 ? " (TF32)" : "") << "\n";
      }
      for (const auto& mode : modes) {
        double rel = 0;
        std::string problem;
        int compiles = 0;
        try {
          capture::CompileOptions o;
          o.backend = "kiln";
          o.mode = mode;
          runtime::CapturedRuntime rt(*m, o);
          for (const auto& c : calls) {
            // Twice per call: CUDA-graph modes record on the first call and replay on the second.
            for (int rep = 0; rep < 2; ++rep) {
              std::vector<c10::IValue> got = rt.run(c.inputs);
              std::vector<at::Tensor> flat;
              for (const auto& v : got)
                for (auto& t : leaves(v)) flat.push_back(t);
              auto p = mismatch(flat, c.outputs, tf32, rel);
              if (problem.empty() && !p.empty()) problem = p;
            }
          }
          for (size_t r = 0; r < rt.regions().size(); ++r) compiles += static_cast<int>(rt.artifacts(static_cast<int>(r)).size());
        } catch (const std::exception& ex) {
          problem = ex.what();
        }
        EXPECT_TRUE(problem.empty()) << path << " " << mode << ": " << problem;
        std::cout << "[pt2] " << name << " " << mode << ": " << (problem.empty() ? "ok" : "FAIL " + problem.substr(0, 200))
                  << " max rel " << rel << ", " << compiles << " compile(s) for " << calls.size() << " call shape(s)\n";
      }
    }
  }
  if (only.empty()) EXPECT_GE(programs, 7) << "the committed miniatures";
}

// kiln profile on the GPU: every device kernel record names the call that launched it (its correlation id
// has a runtime or driver API record), so extern kernels (cuDNN, cuBLAS) reach their graph node and module:
// on a convolution chain, all device time is attributed to modules. (The per-call API filter once
// left no API records at all, and 75% of ResNet-18's kernel time unattributed.)
TEST(GpuProfile, KernelsNameTheirLaunchAndExternKernelsReachTheirModule) {
  if (auto why = why_no_gpu(); !why.empty()) GTEST_SKIP() << "no GPU here: " << why;
  auto m = model::load_model(test::example("tiny_resnet.pt"), "cuda");
  runtime::ProfileOptions o;
  o.modes = {"eager", "default"};
  o.iters = 5;
  o.device = "cuda";
  auto s = runtime::profile_model(m, {parse_input_spec("4x3x32x32")}, o, test::temp_dir() + "/gpu_profile.kiln");
  const session::Run* kiln = nullptr;
  for (const auto& r : s.runs)
    if (r.mode == "default" && r.backend == "kiln") kiln = &r;
  ASSERT_NE(kiln, nullptr);
  ASSERT_EQ(kiln->status, "ok");
  std::set<int64_t> api;
  int kernels = 0, named = 0;
  for (const auto& e : s.timeline)
    if (e.run == kiln->id && e.lane == "cuda api" && (e.category == "cuda_runtime" || e.category == "cuda_driver"))
      api.insert(e.correlation);
  for (const auto& e : s.timeline) {
    if (e.run != kiln->id || e.category != "kernel" || e.correlation < 0) continue;
    ++kernels;
    named += api.count(e.correlation) > 0;
  }
  ASSERT_GT(kernels, 0);
  EXPECT_EQ(named, kernels) << "device kernels without a launch record";
  auto t = report::module_time(s, kiln->id);
  ASSERT_GT(t.total_ns, 0);
  // What the device ran, by kernel and launcher: which records found no module shows here.
  std::ostringstream kernels_seen;
  for (const auto& k : report::kernel_stats(s, kiln->id).kernels) {
    size_t nodes = 0;
    for (const auto& sk : s.kernels)
      if (sk.name == k.launched_by) nodes = sk.nodes.size();
    kernels_seen << "\n  " << k.total_ns << " ns  " << k.name << "  <- " << k.launched_by << " (" << k.launcher << ", "
                 << nodes << " nodes)";
  }
  for (const auto& m : t.modules) kernels_seen << "\n  module '" << m.key << "': " << m.total_ns << " ns";
  // Every record: the layout copies of extern results count for their node too (they were left
  // out, 5 % of this model's device time, when they ran outside the call's span).
  EXPECT_GE(static_cast<double>(t.module_attributed_ns()) / t.total_ns, 0.99)
      << "attributed " << t.module_attributed_ns() << " of " << t.total_ns << " ns" << kernels_seen.str();
}

// kiln profile in a CUDA-graph mode: the traced window records each graph's execution whole (one "graph"
// record per replay, no per-kernel records inside it, so the window's timings are the run's), and the
// detail iterations after it record every kernel of the replayed graphs, attributed as before. With
// KILN_CUPTI_GRAPHS=nodes the window records kernels itself and there are no graph records.
TEST(GpuProfile, GraphModesTimeGraphsWholeAndRecordKernelsInDetailIterations) {
  if (auto why = why_no_gpu(); !why.empty()) GTEST_SKIP() << "no GPU here: " << why;
  auto m = model::load_model(test::example("tiny_resnet.pt"), "cuda");
  runtime::ProfileOptions o;
  o.modes = {"reduce-overhead"};
  o.iters = 5;
  o.timeline_iters = 4;
  o.device = "cuda";
  for (bool nodes : {false, true}) {
    if (nodes) setenv("KILN_CUPTI_GRAPHS", "nodes", 1);
    auto s = runtime::profile_model(m, {parse_input_spec("4x3x32x32")}, o,
                                    test::temp_dir() + (nodes ? "/gpu_nodes.kiln" : "/gpu_graphs.kiln"));
    unsetenv("KILN_CUPTI_GRAPHS");
    const session::Run* ro = nullptr;
    for (const auto& r : s.runs)
      if (r.mode == "reduce-overhead" && r.backend == "kiln") ro = &r;
    ASSERT_NE(ro, nullptr);
    ASSERT_EQ(ro->status, "ok");
    int64_t detail_from = -1;
    int iterations = 0;
    for (const auto& e : s.timeline) {
      if (e.run != ro->id) continue;
      if (e.category == "detail" && (detail_from < 0 || e.start_ns < detail_from)) detail_from = e.start_ns;
      iterations += e.category == "iteration";
    }
    EXPECT_EQ(iterations, 4);
    int graphs = 0, window_graph_kernels = 0, detail_graph_kernels = 0, detail_kernels = 0, attributed = 0;
    nlohmann::json profiler;
    for (const auto& e : s.timeline) {
      if (e.run != ro->id) continue;
      if (e.category == "profiler") profiler = nlohmann::json::parse(e.args_json);
      if (e.category == "graph" && e.lane.rfind("cuda:0/stream ", 0) == 0) {
        ++graphs;
        EXPECT_GT(e.dur_ns, 0);
        EXPECT_FALSE(e.compile_id.empty()) << "a graph record names the region whose replay launched it";
        EXPECT_TRUE(detail_from < 0 || e.start_ns < detail_from);
      }
      if (e.category != "kernel" || e.lane.rfind("cuda:0/stream ", 0) != 0) continue;
      bool in_detail = detail_from >= 0 && e.start_ns >= detail_from;
      detail_kernels += in_detail;
      if (e.args_json.find("graph_node") == std::string::npos) continue;
      (in_detail ? detail_graph_kernels : window_graph_kernels)++;
      attributed += in_detail && !e.compile_id.empty();
    }
    ASSERT_FALSE(profiler.is_null());
    EXPECT_FALSE(profiler.contains("error")) << profiler.dump();
    EXPECT_GT(ro->kernels_per_iter, 1.0);
    if (nodes) {
      EXPECT_EQ(graphs, 0);
      EXPECT_EQ(detail_from, -1);
      EXPECT_GT(window_graph_kernels, 0);
      EXPECT_EQ(profiler["cuda_graphs"], "kernels recorded");
    } else {
      EXPECT_GE(graphs, 4) << "one graph record per replay at least";
      EXPECT_EQ(profiler["graph_records"].get<int>(), graphs);
      EXPECT_EQ(window_graph_kernels, 0) << "kernels inside graphs are not recorded in the window";
      EXPECT_GT(detail_graph_kernels, 0);
      EXPECT_EQ(attributed, detail_graph_kernels) << "every replayed kernel names the region entry it belongs to";
      EXPECT_EQ(profiler["kernel_detail"]["iterations"].get<int>(), 4) << "as many as the window's";
      EXPECT_GT(profiler["kernel_detail"]["cupti_records"].get<int>(), 0);
      EXPECT_DOUBLE_EQ(ro->kernels_per_iter, detail_kernels / 4.0);
      // A report's kernel time per iteration divides the detail's kernels by the window's iteration count.
      auto stats = report::kernel_stats(s, ro->id);
      EXPECT_EQ(stats.iterations, 4);
      for (const auto& h : stats.host) EXPECT_NE(h.category, "detail");
      EXPECT_EQ(profiler["graph_kernels"].get<int>(), detail_graph_kernels);
      std::cout << "[profile] window overhead " << profiler["overhead"] << ", kernel detail overhead "
                << profiler["kernel_detail"]["overhead"] << ", graph records " << graphs << "\n";
    }
  }
}
