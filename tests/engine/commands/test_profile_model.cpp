// Failures are data: a mode or backend that fails is a run row with status "failed" and the error,
// the other runs go on and the session is written; a model that fails even eagerly still gets a
// session; a region whose compilation failed (and so ran eagerly) does not pass for a compiled run.
#include "engine/commands/profile_model.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "engine/base/error.h"
#include "engine/runtime/backend.h"
#include "engine/capture/specialize.h"
#include "engine/report/memory_view.h"
#include "engine/report/trace_cost.h"
#include "engine/runtime/captured_runtime.h"
#include "engine/runtime/example_inputs.h"
#include "engine/session/store.h"
#include "tests/support/paths.h"

using namespace kiln;

namespace {

// Compiles nothing: every region's compilation fails.
class FailingCompileBackend : public runtime::Backend {
 public:
  std::string name() const override { return "test_failing_compile"; }
  std::unique_ptr<runtime::CompiledFn> compile(const capture::SpecializedRegion&, const capture::RegionStatic&,
                                               const runtime::BackendOptions&, runtime::RegionArtifacts&) override {
    throw Error("test_failing_compile: no code for this region");
  }
};

// Compiles, and the compiled code runs once (outputs through the captured trace), then fails.
class FailingRunBackend : public runtime::Backend {
  struct Fn : runtime::CompiledFn {
    capture::SpecializedRegion entry;  // a copy: the runtime moves its own after compiling
    int calls = 0;
    explicit Fn(const capture::SpecializedRegion& e) : entry(e) {}
    void run(capture::Interpreter& interp, capture::Interpreter::Env& env) override {
      if (calls++ > 0) throw Error("test_failing_run: the kernel crashed");
      capture::run_trace(entry, interp, env);
    }
  };

 public:
  std::string name() const override { return "test_failing_run"; }
  std::unique_ptr<runtime::CompiledFn> compile(const capture::SpecializedRegion& entry, const capture::RegionStatic&,
                                               const runtime::BackendOptions&, runtime::RegionArtifacts&) override {
    return std::make_unique<Fn>(entry);
  }
};

const session::Run* find_run(const session::Session& s, const std::string& mode, const std::string& backend) {
  for (const auto& r : s.runs)
    if (r.mode == mode && r.backend == backend) return &r;
  return nullptr;
}

// kiln profile on the CPU, eager and default (and `backends`), into the session file `out`.
session::Session profile_on_cpu(const std::string& model_path, const std::string& input, const std::string& out,
                                std::vector<std::string> backends = {}, int iters = 3) {
  auto m = model::load_model(model_path);
  runtime::ProfileOptions o;
  o.modes = {"eager", "default"};
  if (!backends.empty()) o.backends = std::move(backends);
  o.iters = iters;
  o.device = "cpu";
  std::filesystem::remove(out);
  return runtime::profile_model(m, {parse_input_spec(input)}, o, out);
}

}  // namespace

TEST(ProfileModel, AFailedBackendIsARunRowAndTheOtherRunsGoOn) {
  runtime::register_backend("test_failing_compile", [] { return std::make_unique<FailingCompileBackend>(); });
  runtime::register_backend("test_failing_run", [] { return std::make_unique<FailingRunBackend>(); });
  const std::string out = test::temp_dir() + "/profile_failures.kiln";
  auto s = profile_on_cpu(test::example("small_mlp.pt"), "4x64", out, {"test_failing_compile", "test_failing_run"});
  ASSERT_EQ(s.runs.size(), 4u);
  ASSERT_NE(find_run(s, "eager", "eager"), nullptr);
  EXPECT_EQ(find_run(s, "eager", "eager")->status, "ok");
  EXPECT_EQ(find_run(s, "default", "kiln")->status, "ok");

  // The region ran eagerly because its compilation failed: not a compiled run that passed.
  const auto* compile_failed = find_run(s, "default", "test_failing_compile");
  ASSERT_NE(compile_failed, nullptr);
  EXPECT_EQ(compile_failed->status.rfind("failed: region 0", 0), 0u) << compile_failed->status;
  EXPECT_NE(compile_failed->status.find("no code for this region"), std::string::npos) << compile_failed->status;
  EXPECT_EQ(compile_failed->speedup_vs_eager, 0);

  const auto* run_failed = find_run(s, "default", "test_failing_run");
  ASSERT_NE(run_failed, nullptr);
  // Its compiled code failed from the second call on: those calls ran the region eagerly, so the run is failed.
  EXPECT_EQ(run_failed->status.rfind("failed: region 0", 0), 0u) << run_failed->status;
  EXPECT_NE(run_failed->status.find("the kernel crashed"), std::string::npos) << run_failed->status;
  EXPECT_EQ(run_failed->speedup_vs_eager, 0);

  // What the file holds is what was returned: every row, failed ones included.
  auto back = session::load_session(out);
  ASSERT_EQ(back.runs.size(), 4u);
  EXPECT_EQ(find_run(back, "default", "test_failing_run")->status, run_failed->status);
  EXPECT_EQ(find_run(back, "default", "test_failing_compile")->status, compile_failed->status);
}

TEST(ProfileModel, AModelThatFailsEagerlyStillGetsASessionWithTheError) {
  // small_mlp wants 64 features
  const std::string out = test::temp_dir() + "/profile_eager_fails.kiln";
  auto s = profile_on_cpu(test::example("small_mlp.pt"), "4x63", out, {}, 2);
  ASSERT_EQ(s.runs.size(), 2u);
  EXPECT_EQ(s.runs[0].mode, "eager");
  EXPECT_EQ(s.runs[0].status.rfind("failed: ", 0), 0u) << s.runs[0].status;
  EXPECT_NE(s.runs[0].status.find("forward on inputs [4x63]"), std::string::npos) << s.runs[0].status;
  EXPECT_EQ(s.runs[1].status.rfind("failed: ", 0), 0u) << s.runs[1].status;
  auto back = session::load_session(out);
  ASSERT_EQ(back.runs.size(), 2u);
  EXPECT_EQ(back.runs[0].status, s.runs[0].status);
  EXPECT_EQ(back.model.inputs, std::vector<std::string>{"4x63"});
}

TEST(CapturedRuntime, AFailureNamesTheSourceLineWhereItHappened) {
  auto m = model::load_model(test::example("breaky.pt"));
  capture::CompileOptions co;
  co.backend = "kiln";
  runtime::CapturedRuntime rt(m, co);
  auto x = runtime::make_inputs({parse_input_spec("4x63")});  // l1 wants 64 features
  std::ostringstream printed;
  try {
    rt.run(x, &printed);
    FAIL() << "a 4x63 input ran through a 64-feature linear layer";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("(at sample_models.py:41"), std::string::npos) << what;
    EXPECT_NE(what.find("torch.relu(self.l1(x))"), std::string::npos) << what;
  }
}

// Memory planning: on the CPU examples and corpus miniatures, Kiln's default mode peaks no higher
// than eager (bytes allocated during the traced iterations, weights excluded), and each run keeps
// its memory lane and what was live at its peak, owners summing to the peak.
TEST(ProfileModel, DefaultModePeaksNoHigherThanEagerAndKeepsItsPeakView) {
  struct Case {
    std::string path, input;
  };
  const std::vector<Case> cases = {{test::example("block.pt"), "2x16x64"},
                                   {test::example("tiny_resnet.pt"), "2x3x16x16"},
                                   {test::data("corpus/resnet18.pt"), "2x3x32x32"},
                                   {test::data("corpus/mobilenet_v3_small.pt"), "2x3x32x32"},
                                   {test::data("corpus/convnext_tiny.pt"), "2x3x32x32"},
                                   {test::data("corpus/gpt2_embeds.pt"), "2x8x32"}};
  for (const auto& c : cases) {
    auto s = profile_on_cpu(c.path, c.input, test::temp_dir() + "/profile_memory.kiln");
    const auto* eager = find_run(s, "eager", "eager");
    const auto* kiln = find_run(s, "default", "kiln");
    ASSERT_TRUE(eager && kiln) << c.path;
    ASSERT_EQ(kiln->status, "ok") << c.path;
    EXPECT_GT(eager->peak_memory_bytes, 0) << c.path;
    EXPECT_LE(kiln->peak_memory_bytes, eager->peak_memory_bytes) << c.path;
    for (const auto* r : {eager, kiln}) {
      int64_t at_peak = 0;
      int samples = 0;
      for (const auto& e : s.timeline) {
        if (e.run != r->id || e.lane != "memory cpu") continue;
        if (e.category == "memory") ++samples;
        if (e.category == "memory peak") at_peak += report::bytes_of(e);
      }
      EXPECT_GT(samples, 0) << c.path << " " << r->mode;
      // The window's peak is the steady state's (the same iterations, traced).
      EXPECT_EQ(at_peak, r->peak_memory_bytes) << c.path << " " << r->mode;
    }
  }
}

// Every traced run says what tracing cost it, on the CPU too: one profiler event per run with the traced
// window's median against the untraced one, which the reports read back (report/trace_cost.h).
// What tracing cost is the median of more traced iterations than are drawn (as many as the untraced ones, at most
// 20); only the drawn iterations' spans, ops and memory samples reach the timeline.
TEST(ProfileModel, EveryTracedRunRecordsWhatTracingCostIt) {
  auto s = profile_on_cpu(test::example("block.pt"), "2x16x64", test::temp_dir() + "/trace_cost.kiln", {}, 12);
  ASSERT_EQ(s.runs.size(), 2u);
  for (const auto& r : s.runs) {
    int events = 0, iterations = 0;
    int64_t drawn_end = 0;
    for (const auto& e : s.timeline)
      if (e.run == r.id && e.category == "iteration") {
        ++iterations;
        drawn_end = std::max(drawn_end, e.start_ns + e.dur_ns);
      }
    EXPECT_EQ(iterations, 3) << r.mode;
    for (const auto& e : s.timeline)
      if (e.run == r.id && e.category != "profiler")
        EXPECT_LE(e.start_ns, drawn_end) << e.category << " " << e.name << ": after the drawn iterations";
    for (const auto& e : s.timeline) {
      if (e.run != r.id || e.category != "profiler") continue;
      EXPECT_NE(e.args_json.find("\"timed_iterations\":12"), std::string::npos) << e.args_json;
      ++events;
      EXPECT_EQ(e.name, "traced window");
      auto c = report::trace_cost_of(e);
      ASSERT_TRUE(c.has_value()) << e.args_json;
      EXPECT_FALSE(c->cupti);
      EXPECT_GT(c->overhead, -1.0) << "a traced median was measured";
      EXPECT_NE(e.args_json.find("\"untraced_median_ms\""), std::string::npos);
    }
    EXPECT_EQ(events, 1) << r.mode;
  }
}
