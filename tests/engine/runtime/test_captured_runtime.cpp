// The captured runtime: results equal module.forward exactly; guards, recompiles, automatic
// dynamic shapes and the cache limit behave as Dynamo's do.
#include "engine/runtime/captured_runtime.h"

#include <gtest/gtest.h>

#include <sstream>

#include "engine/base/error.h"
#include "engine/profile/host_trace.h"
#include "engine/runtime/example_inputs.h"
#include "tests/support/paths.h"
#include "tests/support/scripted_models.h"

using namespace kiln;
using capture::Event;

namespace {

at::Tensor eager(const model::Model& m, const at::Tensor& x) {
  torch::NoGradGuard g;
  return const_cast<torch::jit::Module&>(m.impl->module).forward({x}).toTensor();
}

at::Tensor input(const std::string& spec) { return runtime::make_inputs({parse_input_spec(spec)})[0]; }

std::vector<const Event*> events_of(const runtime::CapturedRuntime& rt, Event::Kind k) {
  std::vector<const Event*> out;
  for (const auto& e : rt.events())
    if (e.kind == k) out.push_back(&e);
  return out;
}

}  // namespace

TEST(CapturedRuntime, EveryExampleEqualsEagerExactly) {
  struct Case {
    const char* model;
    std::vector<const char*> inputs;
  };
  std::vector<Case> cases = {{"small_mlp.pt", {"4x64", "8x64"}}, {"small_mlp_traced.pt", {"8x64"}},
                             {"gate.pt", {"4x64", "4x64", "4x64", "2x64"}}, {"breaky.pt", {"4x64", "4x64", "4x64"}},
                             {"block.pt", {"2x16x64", "2x8x64"}}, {"tiny_resnet.pt", {"2x3x16x16"}},
                             {"shape_branch.pt", {"2x16", "8x16"}}};
  for (const auto& c : cases) {
    auto m = model::load_model(test::example(c.model));
    runtime::CapturedRuntime rt(m, {});
    for (const char* spec : c.inputs) {
      auto x = input(spec);
      std::ostringstream printed;
      auto out = rt.run({x}, &printed);
      ASSERT_EQ(out.size(), 1u);
      EXPECT_TRUE(torch::equal(out[0].toTensor(), eager(m, x))) << c.model << " " << spec;
    }
  }
}

// Kiln runs a model for inference (runtime/inference_guard.h): under no-grad, or under InferenceMode with
// KILN_INFERENCE_MODE=1, whose results are inference tensors that read, copy and compare like any other.
TEST(CapturedRuntime, RunsUnderInferenceModeWhenAsked) {
  auto m = model::load_model(test::example("tiny_resnet.pt"));
  runtime::CapturedRuntime rt(m, {});
  auto x = input("2x3x16x16");
  auto plain = rt.run({x})[0].toTensor();
  EXPECT_FALSE(plain.is_inference());
  setenv("KILN_INFERENCE_MODE", "1", 1);
  auto out = rt.run({x})[0].toTensor();
  unsetenv("KILN_INFERENCE_MODE");
  EXPECT_TRUE(out.is_inference());
  EXPECT_FALSE(x.is_inference()) << "the caller's input is untouched";
  EXPECT_TRUE(torch::equal(out, eager(m, x)));
  EXPECT_TRUE(torch::equal(plain, out));
  auto copy = out.clone();
  EXPECT_FALSE(copy.is_inference());
  copy.add_(1);  // a copy is the caller's to change
}

TEST(CapturedRuntime, ShapeBranchRecompilesWithDynamoReasons) {
  auto m = model::load_model(test::example("shape_branch.pt"));
  runtime::CapturedRuntime rt(m, {});
  for (const char* s : {"2x16", "8x16", "6x16", "3x16"}) {
    auto x = input(s);
    EXPECT_TRUE(torch::equal(rt.run({x})[0].toTensor(), eager(m, x))) << s;
  }
  EXPECT_TRUE(rt.partition().breaks.empty());
  auto regions = rt.regions();
  ASSERT_EQ(regions.size(), 1u);
  const auto& entries = regions[0].entries;
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[0].compile_id, "[0/0]");
  EXPECT_EQ(entries[1].compile_id, "[0/1]");
  EXPECT_EQ(entries[1].recompile_reason, "tensor 'x' size mismatch at index 0. expected 2, actual 8");
  // The new entry has a symbolic batch size and a guard on the branch condition.
  EXPECT_EQ(entries[1].guards.symbols, std::vector<std::string>{"s0 = x.size(0)"});
  bool has_branch_guard = false;
  for (const auto& g : entries[1].guards.guards) has_branch_guard |= g.text == "s0 > 4";
  EXPECT_TRUE(has_branch_guard);
  EXPECT_EQ(entries[1].hits, 2);  // 8x16 compiled it, 6x16 hit it
  EXPECT_EQ(entries[2].recompile_reason, "guard failed: s0 > 4 (s0 = 3)");
  auto recompiles = events_of(rt, Event::Kind::Recompile);
  ASSERT_EQ(recompiles.size(), 2u);
  EXPECT_EQ(recompiles[0]->call, 1);
  EXPECT_EQ(recompiles[0]->compile_id, "[0/1]");
  EXPECT_EQ(recompiles[1]->call, 3);
}

TEST(CapturedRuntime, SmallMlpBecomesDynamicAfterOneRecompile) {
  auto m = model::load_model(test::example("small_mlp.pt"));
  runtime::CapturedRuntime rt(m, {});
  for (const char* s : {"4x64", "8x64", "16x64"}) {
    auto x = input(s);
    EXPECT_TRUE(torch::equal(rt.run({x})[0].toTensor(), eager(m, x)));
  }
  auto regions = rt.regions();
  ASSERT_EQ(regions[0].entries.size(), 2u);
  EXPECT_EQ(regions[0].entries[1].hits, 2);
  EXPECT_EQ(regions[0].entries[1].graph.nodes[0].outputs[0].meta.str(), "f32[s0, 64]");
}

TEST(CapturedRuntime, DynamicTrueAndFalse) {
  auto m = model::load_model(test::example("small_mlp.pt"));
  capture::CompileOptions dyn;
  dyn.dynamic = true;
  runtime::CapturedRuntime a(m, dyn);
  for (const char* s : {"4x64", "8x64", "16x64"}) a.run({input(s)});
  EXPECT_EQ(a.regions()[0].entries.size(), 1u);
  capture::CompileOptions stat;
  stat.dynamic = false;
  runtime::CapturedRuntime b(m, stat);
  for (const char* s : {"4x64", "8x64", "16x64"}) b.run({input(s)});
  EXPECT_EQ(b.regions()[0].entries.size(), 3u);
}

TEST(CapturedRuntime, CacheLimitFallsBackToEagerLoudly) {
  auto m = model::load_model(test::example("small_mlp.pt"));
  capture::CompileOptions o;
  o.dynamic = false;  // every batch size is its own specialization
  runtime::CapturedRuntime rt(m, o);
  for (int b = 1; b <= 10; ++b) {
    auto x = input(std::to_string(b) + "x64");
    EXPECT_TRUE(torch::equal(rt.run({x})[0].toTensor(), eager(m, x))) << b;
  }
  auto regions = rt.regions();
  EXPECT_EQ(regions[0].entries.size(), 8u);
  EXPECT_TRUE(regions[0].limit_reached);
  auto limits = events_of(rt, Event::Kind::RecompileLimit);
  ASSERT_EQ(limits.size(), 1u);
  EXPECT_EQ(limits[0]->call, 8);
  EXPECT_NE(limits[0]->message.find("recompile limit reached"), std::string::npos);
  EXPECT_NE(limits[0]->message.find("tensor 'x' size mismatch at index 0. expected 8, actual 9"), std::string::npos)
      << limits[0]->message;
  EXPECT_EQ(events_of(rt, Event::Kind::EagerFallback).size(), 2u);  // calls 9 and 10
}

TEST(CapturedRuntime, GuardFailuresForDtypeAndRank) {
  auto m = model::load_model(test::example("small_mlp.pt"));
  runtime::CapturedRuntime rt(m, {});
  rt.run({input("4x64")});
  rt.run({input("4x64:float64").to(at::kFloat).to(at::kDouble).to(at::kFloat)});  // same dtype: a hit
  EXPECT_EQ(rt.regions()[0].entries.size(), 1u);
  auto x = input("4x64").t().contiguous().t();  // same sizes, column-major strides
  auto out = rt.run({x});
  EXPECT_TRUE(torch::equal(out[0].toTensor(), eager(m, x)));
  auto failures = events_of(rt, Event::Kind::GuardFailure);
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_EQ(failures[0]->message, "tensor 'x' stride mismatch at index 0. expected 64, actual 1");
}

TEST(CapturedRuntime, FullgraphNamesTheBreakAndItsLine) {
  auto m = model::load_model(test::example("breaky.pt"));
  capture::CompileOptions o;
  o.fullgraph = true;
  try {
    runtime::CapturedRuntime rt(m, o);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("fullgraph=True"), std::string::npos) << msg;
    EXPECT_NE(msg.find("sample_models.py:42"), std::string::npos) << msg;
    EXPECT_NE(msg.find("print(\"mid\")"), std::string::npos) << msg;
  }
  EXPECT_NO_THROW(runtime::CapturedRuntime(model::load_model(test::example("block.pt")), o));
}

TEST(CapturedRuntime, DisableRunsEagerly) {
  auto m = model::load_model(test::example("breaky.pt"));
  capture::CompileOptions o;
  o.disable = true;
  runtime::CapturedRuntime rt(m, o);
  auto x = input("4x64");
  std::ostringstream printed;
  EXPECT_TRUE(torch::equal(rt.run({x}, &printed)[0].toTensor(), eager(m, x)));
  for (const auto& r : rt.regions()) EXPECT_TRUE(r.entries.empty());
}

TEST(CapturedRuntime, EventsAreTimestampedInOrder) {
  auto m = model::load_model(test::example("breaky.pt"));
  runtime::CapturedRuntime rt(m, {});
  std::ostringstream printed;
  rt.run({input("4x64")}, &printed);
  rt.run({input("4x64")}, &printed);
  EXPECT_EQ(printed.str(), "mid\nmid\n");
  int64_t last = -1;
  for (const auto& e : rt.events()) {
    EXPECT_GE(e.t_ns, last);
    last = e.t_ns;
  }
  EXPECT_EQ(events_of(rt, Event::Kind::GraphBreak).size(), 6u);  // 3 breaks x 2 calls
  EXPECT_GE(events_of(rt, Event::Kind::Capture).size(), 4u);
}

namespace {


}  // namespace

TEST(CapturedRuntime, ConstantLoopOverTheUnrollLimitIsAReportedBreak) {
  auto path = test::scripted_model("Chain", R"JIT(
def forward(self, x):
    for _ in range(500):
        x = x + torch.sin(x)
    return x
)JIT");
  auto m = model::load_model(path);
  capture::CompileOptions o;
  o.unroll_limit = 8;
  runtime::CapturedRuntime rt(m, o);
  bool kb006 = false;
  for (const auto& b : rt.partition().breaks) kb006 |= b.id == "KB006";
  EXPECT_TRUE(kb006) << capture::partition_text(rt.partition());
  auto x = input("4x8");
  EXPECT_TRUE(torch::equal(rt.run({x})[0].toTensor(), eager(m, x)));
}

TEST(CapturedRuntime, ShapeDependentLoopPastTheLimitRunsEagerlyAndSaysSo) {
  auto path = test::scripted_model("ShapeLoop", R"JIT(
def forward(self, x):
    y = x
    for _ in range(x.size(0)):
        y = y + torch.sin(y)
    return y
)JIT");
  auto m = model::load_model(path);
  capture::CompileOptions o;
  o.unroll_limit = 4;  // 4 * 8 nodes: 64 iterations of two ops are far past it
  runtime::CapturedRuntime rt(m, o);
  auto x = input("64x8");
  EXPECT_TRUE(torch::equal(rt.run({x})[0].toTensor(), eager(m, x)));
  auto limits = events_of(rt, Event::Kind::UnrollLimit);
  ASSERT_EQ(limits.size(), 1u);
  EXPECT_NE(limits[0]->message.find("unroll limit reached"), std::string::npos);
  EXPECT_EQ(events_of(rt, Event::Kind::EagerFallback).size(), 1u);
  // Small enough to unroll: captured normally.
  runtime::CapturedRuntime rt2(m, {});
  auto x2 = input("3x8");
  EXPECT_TRUE(torch::equal(rt2.run({x2})[0].toTensor(), eager(m, x2)));
  EXPECT_TRUE(events_of(rt2, Event::Kind::UnrollLimit).empty());
}

// A region's host span names the cache entry that ran in it, the call that compiled it included, so device
// work launched inside the span (a CUDA graph's replay: no kernel span of its own) is attributed to that entry.
TEST(CapturedRuntime, RegionSpansNameTheEntryTheirGuardsChose) {
  auto m = model::load_model(test::example("shape_branch.pt"));
  runtime::CapturedRuntime rt(m, {});
  profile::HostTrace trace;
  for (const char* s : {"2x16", "2x16", "8x16", "8x16", "2x16"}) {
    std::ostringstream printed;
    rt.run({input(s)}, &printed);
  }
  std::vector<std::string> ids;  // the compile ids of region 0's spans, call by call
  for (const auto& s : trace.spans())
    if (s.category == "region" && s.name == "region 0") ids.push_back(s.compile_id);
  ASSERT_EQ(ids.size(), 5u);
  EXPECT_EQ(ids[0], "[0/0]");
  EXPECT_EQ(ids[1], "[0/0]");
  EXPECT_EQ(ids[2], "[0/1]") << "the call that recompiled names the new entry";
  EXPECT_EQ(ids[3], "[0/1]");
  EXPECT_EQ(ids[4], "[0/0]") << "the newest entry's guard (s0 > 4) fails; the first entry still serves 2x16";
}

namespace {

// Compiles every region; its compiled code's first run fails inside LibTorch (a c10::Error, as an op called with
// operands it refuses raises), before writing any output.
class TorchErrorBackend : public runtime::Backend {
  struct Fn : runtime::CompiledFn {
    void run(capture::Interpreter&, capture::Interpreter::Env&) override {
      at::Tensor a = at::ones({2}, at::kFloat), b = at::ones({2}, at::kBFloat16);
      at::mm(a.view({1, 2}), b.view({2, 1}));  // mixed dtypes: LibTorch refuses
    }
  };

 public:
  std::string name() const override { return "test_torch_error"; }
  std::unique_ptr<runtime::CompiledFn> compile(const capture::SpecializedRegion&, const capture::RegionStatic&,
                                               const runtime::BackendOptions&, runtime::RegionArtifacts&) override {
    return std::make_unique<Fn>();
  }
};

}  // namespace

TEST(CapturedRuntime, ALibTorchErrorInCompiledCodeRunsTheRegionEagerlyAndSaysWhy) {
  runtime::register_backend("test_torch_error", [] { return std::make_unique<TorchErrorBackend>(); });
  auto m = model::load_model(test::example("small_mlp.pt"));
  capture::CompileOptions o;
  o.backend = "test_torch_error";
  runtime::CapturedRuntime rt(m, o);
  for (int call = 0; call < 2; ++call) {  // the first call falls back; the second runs the region eagerly again
    auto x = input("4x64");
    EXPECT_TRUE(torch::equal(rt.run({x})[0].toTensor(), eager(m, x))) << call;
  }
  auto fallbacks = events_of(rt, Event::Kind::EagerFallback);
  ASSERT_EQ(fallbacks.size(), 1u);
  const std::string& why = fallbacks[0]->message;
  EXPECT_NE(why.find("backend test_torch_error failed, region runs eagerly: "), std::string::npos) << why;
  EXPECT_NE(why.find("expected"), std::string::npos) << why;  // LibTorch's own message
  EXPECT_EQ(why.find("Exception raised from"), std::string::npos) << why;  // without its C++ backtrace
}

// Every dim symbolic from the first compile (dynamic=true), then another image size: capture fixed the stride-2
// convolutions' output sizes (no input size equals them) and no guard covers them, so the compiled code cannot run
// the second call's sizes. That call runs the region eagerly, once said; its result and every later one equal eager.
TEST(CapturedRuntime, CompiledCodeThatCannotRunInputsItsGuardsPassedRunsTheRegionEagerly) {
  auto m = model::load_model(test::data("corpus/resnet18.pt"));
  capture::CompileOptions o;
  o.backend = "kiln";
  o.dynamic = true;
  runtime::CapturedRuntime rt(m, o);
  for (const char* spec : {"2x3x32x20", "2x3x40x20", "2x3x40x20", "2x3x32x20"}) {
    auto x = input(spec);
    EXPECT_TRUE(rt.run({x})[0].toTensor().allclose(eager(m, x), 1e-4, 1e-5)) << spec;
  }
  auto fallbacks = events_of(rt, Event::Kind::EagerFallback);
  ASSERT_EQ(fallbacks.size(), 1u);
  EXPECT_NE(fallbacks[0]->message.find("compiled code failed, region runs eagerly on inputs its guards passed: "), std::string::npos)
      << fallbacks[0]->message;
  EXPECT_NE(fallbacks[0]->message.find("returned sizes"), std::string::npos) << fallbacks[0]->message;
}
