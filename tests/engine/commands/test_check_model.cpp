// The accuracy bisector: with a deliberately wrong lowering injected (a test-only hook in the
// lowering layer) it must name exactly the kernel that computes the wrongly lowered op, with that
// kernel's nodes; with nothing injected it must report a match.
#include "engine/commands/check_model.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>

#include "engine/codegen/cpp/cpp_compiler.h"
#include "engine/codegen/cpp/emit_cpp.h"
#include "engine/lowering/lower_graph.h"
#include "engine/lowering/wrong_lowering.h"
#include "engine/runtime/captured_runtime.h"
#include "engine/runtime/example_inputs.h"
#include "engine/runtime/lowered_region.h"
#include "tests/support/paths.h"

using namespace kiln;

namespace {

runtime::CheckResult check(const std::string& example, const std::string& input, uint64_t seed = 11,
                           const std::string& backend = "kiln") {
  auto m = model::load_model(test::example(example));
  runtime::CheckOptions o;
  o.capture.backend = backend;
  o.capture.dynamic = false;
  o.seed = seed;
  return runtime::check_model(m, {parse_input_spec(input)}, o);
}

struct ExpectedCulprit {
  std::string compile_id;
  std::string kernel;
  std::vector<std::string> nodes;
};

// Compiles the model without any injection and finds, from the compiler's own artifacts, the
// first kernel (regions in run order, kernels in program order) that computes a node with target
// `op`: the kernel a wrong lowering of `op` makes wrong first.
ExpectedCulprit first_kernel_computing(const std::string& example, const std::string& input, const std::string& op,
                                       uint64_t seed = 11) {
  auto m = model::load_model(test::example(example));
  capture::CompileOptions o;
  o.backend = "kiln";
  o.dynamic = false;
  runtime::CapturedRuntime rt(m, o);
  std::ostringstream printed;
  rt.run(runtime::make_inputs({parse_input_spec(input)}, seed), &printed);
  // Regions in the order their first call ran them: their capture events are in run order.
  std::vector<int> order;
  for (const auto& e : rt.events())
    if (e.kind == capture::Event::Kind::Capture) order.push_back(e.region);
  const auto regions = rt.regions();
  for (int r : order) {
    const auto& info = regions[r];
    std::set<std::string> op_nodes;
    for (const auto& n : info.entries[0].graph.nodes)
      if (n.target == op && !n.outputs.empty()) op_nodes.insert(n.name());
    for (const auto& k : rt.artifacts(r)[0].kernels)
      for (const auto& n : k.nodes)
        if (op_nodes.count(n)) return {info.entries[0].compile_id, k.name, k.nodes};
  }
  return {};
}

const runtime::KernelCheck* culprit(const runtime::CheckResult& r) {
  return r.culprit >= 0 ? &r.kernels[r.culprit] : nullptr;
}

// A check of `example` with `op` lowered as `wrong_as`, and the kernel the bisector must name: the first computing
// aten::`op`, found from a compile without the injection.
struct InjectedCheck {
  ExpectedCulprit expected;
  runtime::CheckResult result;
};

InjectedCheck check_with_wrong_lowering(const std::string& example, const std::string& input, const std::string& op,
                                        const std::string& wrong_as) {
  InjectedCheck c;
  c.expected = first_kernel_computing(example, input, "aten::" + op);
  lowering::WrongLoweringForTesting wrong(op, wrong_as);
  c.result = check(example, input);
  return c;
}

// The bisector named the expected kernel, with that kernel's nodes.
void expect_culprit_is(const runtime::CheckResult& r, const ExpectedCulprit& expected) {
  ASSERT_NE(culprit(r), nullptr);
  EXPECT_EQ(culprit(r)->name, expected.kernel);
  EXPECT_EQ(culprit(r)->nodes, expected.nodes);
}

}  // namespace

TEST(CheckModel, WithoutInjectionEveryExampleMatches) {
  for (auto [name, input] : std::vector<std::pair<const char*, const char*>>{
           {"small_mlp.pt", "4x64"}, {"block.pt", "2x16x64"}, {"gate.pt", "4x64"}, {"tiny_resnet.pt", "2x3x16x16"}}) {
    auto r = check(name, input);
    SCOPED_TRACE(runtime::check_text(r));
    EXPECT_TRUE(r.match) << name;
    EXPECT_TRUE(r.regions.empty());
    EXPECT_EQ(r.culprit, -1);
    ASSERT_FALSE(r.outputs.empty());
    EXPECT_GT(r.outputs[0].elements, 0);
  }
}

TEST(CheckModel, AddLoweredAsSubIsPinnedOnTheKernelComputingAdd) {
  auto [expected, r] = check_with_wrong_lowering("small_mlp.pt", "4x64", "add", "sub");
  ASSERT_FALSE(expected.kernel.empty());
  SCOPED_TRACE(runtime::check_text(r));
  EXPECT_FALSE(r.match);
  ASSERT_GE(r.first_region, 0);
  EXPECT_EQ(r.regions[r.first_region].compile_id, expected.compile_id);
  ASSERT_NO_FATAL_FAILURE(expect_culprit_is(r, expected));
  EXPECT_GT(culprit(r)->outputs.at(0).max_abs, 0.1);  // x + t became x - t: an O(1) error
  EXPECT_NE(culprit(r)->source.find(expected.kernel + "("), std::string::npos);
  EXPECT_NE(culprit(r)->source.find(" - "), std::string::npos);  // the wrong code is what is shown
  // Only that kernel is wrong.
  for (const auto& k : r.kernels) EXPECT_EQ(!k.ok, k.name == expected.kernel) << k.name;
}

TEST(CheckModel, UpstreamErrorDoesNotSpreadToLaterKernels) {
  // relu lowered as identity: the relu kernel is wrong; the kernel after it reads relu's output,
  // but is fed the eager value, so it matches and the first culprit stays the only one.
  auto [expected, r] = check_with_wrong_lowering("small_mlp.pt", "4x64", "relu", "identity");
  ASSERT_FALSE(expected.kernel.empty());
  SCOPED_TRACE(runtime::check_text(r));
  EXPECT_FALSE(r.match);
  ASSERT_NO_FATAL_FAILURE(expect_culprit_is(r, expected));
  ASSERT_GE(r.kernels.size(), 2u);
  int wrong_kernels = 0;
  for (const auto& k : r.kernels) wrong_kernels += k.ok ? 0 : 1;
  EXPECT_EQ(wrong_kernels, 1);
}

TEST(CheckModel, FirstOfSeveralWrongKernelsIsNamed) {
  // block.pt adds in two kernels (the residual into the second layer_norm, and the last one):
  // both are wrong, the first in run order is named.
  auto [expected, r] = check_with_wrong_lowering("block.pt", "2x16x64", "add", "sub");
  ASSERT_FALSE(expected.kernel.empty());
  SCOPED_TRACE(runtime::check_text(r));
  ASSERT_NO_FATAL_FAILURE(expect_culprit_is(r, expected));
  int wrong_kernels = 0;
  for (const auto& k : r.kernels) wrong_kernels += k.ok ? 0 : 1;
  EXPECT_GE(wrong_kernels, 2);
  for (int k = 0; k < r.culprit; ++k) EXPECT_TRUE(r.kernels[k].ok) << r.kernels[k].name;
}

TEST(CheckModel, DivergingRegionIsFoundAfterMatchingOnes) {
  // gate.pt has a graph break; the adds live in the loop region that runs last.
  auto [expected, r] = check_with_wrong_lowering("gate.pt", "4x64", "add", "sub");
  ASSERT_FALSE(expected.kernel.empty());
  SCOPED_TRACE(runtime::check_text(r));
  ASSERT_GE(r.first_region, 1);  // an earlier region ran and matched
  for (int i = 0; i < r.first_region; ++i) EXPECT_TRUE(r.regions[i].ok);
  EXPECT_EQ(r.regions[r.first_region].compile_id, expected.compile_id);
  expect_culprit_is(r, expected);
}

TEST(CheckModel, ClearingTheInjectionRestoresAMatch) {
  { lowering::WrongLoweringForTesting wrong("add", "sub"); EXPECT_FALSE(check("small_mlp.pt", "4x64").match); }
  EXPECT_EQ(lowering::wrong_lowering_of("add"), "add");
  EXPECT_TRUE(check("small_mlp.pt", "4x64").match);
}

namespace {

// A backend like kiln's whose last kernel is never called: its output buffer is left as allocated.
class SilentLastKernelBackend : public runtime::Backend {
 public:
  std::string name() const override { return "test_silent_last_kernel"; }
  std::unique_ptr<runtime::CompiledFn> compile(const capture::SpecializedRegion& entry,
                                               const capture::RegionStatic& region, const runtime::BackendOptions&,
                                               runtime::RegionArtifacts& art) override {
    auto lowered = lowering::lower_graph(entry.info.graph);
    auto fused = fusion::schedule(lowered.program);
    std::string source = codegen::emit_cpp(fused);
    std::vector<std::string> names;
    for (const auto& k : fused.kernels) names.push_back(k.name);
    if (names.empty()) return nullptr;
    auto lib = codegen::compile_cpp(source, names);
    std::vector<runtime::KernelCall> calls;
    for (size_t i = 0; i < names.size(); ++i) {
      if (i + 1 == names.size()) calls.push_back([](void* const*, const double*, const int64_t*) {});
      else calls.push_back(lib.kernels.at(names[i]));
      session::Kernel k;
      k.name = names[i];
      k.nodes = fused.kernels[i].nodes;
      art.kernels.push_back(k);
    }
    return std::make_unique<runtime::LoweredRegionFn>(entry, region, std::move(lowered), std::move(fused),
                                                      std::move(calls), lib.handle);
  }
};

}  // namespace

TEST(CheckModel, AKernelThatWritesNothingIsCaughtThroughPoisonedBuffers) {
  runtime::register_backend("test_silent_last_kernel", [] { return std::make_unique<SilentLastKernelBackend>(); });
  auto r = check("small_mlp.pt", "4x64", 11, "test_silent_last_kernel");
  SCOPED_TRACE(runtime::check_text(r));
  EXPECT_FALSE(r.match);
  EXPECT_TRUE(std::isinf(r.outputs.at(0).max_abs));  // NaN where eager has numbers
  ASSERT_NE(culprit(r), nullptr);
  EXPECT_EQ(culprit(r), &r.kernels.back());
  EXPECT_EQ(r.outputs.at(0).mismatched, r.outputs.at(0).elements);
}

TEST(CheckModel, TextAndJsonReportTheCulprit) {
  lowering::WrongLoweringForTesting wrong("add", "sub");
  auto r = check("small_mlp.pt", "4x64", 5);
  ASSERT_NE(culprit(r), nullptr);
  auto text = runtime::check_text(r);
  EXPECT_NE(text.find("FIRST DIFFERING KERNEL: " + culprit(r)->name), std::string::npos) << text;
  EXPECT_NE(text.find("seed 5"), std::string::npos) << text;
  auto j = nlohmann::json::parse(runtime::check_json(r));
  EXPECT_EQ(j["match"], false);
  EXPECT_EQ(j["seed"], 5);
  EXPECT_EQ(j["first_kernel"], culprit(r)->name);
  EXPECT_EQ(j["first_region"], r.regions[r.first_region].compile_id);
}

TEST(CheckModel, SameSeedSameInputsAndFreshSeedsDiffer) {
  auto a = check("small_mlp.pt", "4x64", 42), b = check("small_mlp.pt", "4x64", 42);
  EXPECT_EQ(a.outputs[0].max_abs, b.outputs[0].max_abs);
  auto c = check("small_mlp.pt", "4x64", 0), d = check("small_mlp.pt", "4x64", 0);
  EXPECT_NE(c.seed, 0u);
  EXPECT_NE(c.seed, d.seed);
}

TEST(CheckModel, BadInputsAreOneClearError) {
  auto m = model::load_model(test::example("small_mlp.pt"));
  runtime::CheckOptions o;
  o.capture.backend = "kiln";
  try {
    runtime::check_model(m, {parse_input_spec("4x64"), parse_input_spec("4x64")}, o);
    FAIL() << "two inputs accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("forward takes 1 input (x), 2 given"), std::string::npos) << e.what();
  }
  o.rtol = -1;
  EXPECT_THROW(runtime::check_model(m, {parse_input_spec("4x64")}, o), Error);
  o.rtol = 1e-4;
  o.atol = NAN;
  EXPECT_THROW(runtime::check_model(m, {parse_input_spec("4x64")}, o), Error);
  o.atol = 1e-5;
  o.capture.backend = "no_such_backend";
  EXPECT_THROW(runtime::check_model(m, {parse_input_spec("4x64")}, o), Error);
}
