// The built-in backends end to end: every example model compiles with kiln and matches LibTorch
// eager within the stated tolerances on fresh random inputs; the disk cache makes a warm compile
// invoke no compiler; backends load from a shared library.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

#include "engine/base/error.h"
#include "engine/codegen/cpp/cpp_compiler.h"
#include "engine/model/model_impl.h"
#include "tests/support/compile_support.h"

using namespace kiln;

namespace {

struct Case {
  const char* model;
  const char* input;
  double tolerance;  // relative: 1e-5 pointwise-only, 1e-4 with reductions or GEMM (float32)
};

const Case kCases[] = {{"small_mlp.pt", "8x64", 1e-4},      {"small_mlp_traced.pt", "8x64", 1e-4},
                       {"gate.pt", "4x64", 1e-4},           {"breaky.pt", "4x64", 1e-4},
                       {"block.pt", "2x16x64", 1e-4},       {"tiny_resnet.pt", "2x3x16x16", 1e-4},
                       {"shape_branch.pt", "8x16", 1e-4},   {"shape_branch.pt", "3x16", 1e-4}};

}  // namespace

TEST(KilnBackend, EveryExampleMatchesEager) {
  for (const auto& c : kCases) {
    auto cm = test::compile_example(c.model, c.input, "kiln");
    EXPECT_TRUE(cm.artifacts.note.empty()) << c.model << ": " << cm.artifacts.note;
    EXPECT_LE(test::relative_error(cm, c.input), c.tolerance) << c.model;
  }
}

TEST(KilnBackend, AotEagerMatchesEager) {
  for (const auto& c : kCases) {
    auto cm = test::compile_example(c.model, c.input, "aot_eager");
    EXPECT_LE(test::relative_error(cm, c.input), c.tolerance) << c.model;
  }
}

TEST(KilnBackend, DynamicBatchCompilesSymbolicKernels) {
  auto m = model::load_model(test::example("small_mlp.pt"));
  capture::CompileOptions o;
  o.backend = "kiln";
  runtime::CapturedRuntime rt(m, o);
  for (const char* s : {"4x64", "8x64", "16x64", "5x64"}) {
    auto x = runtime::make_inputs({parse_input_spec(s)});
    auto out = rt.run(x)[0].toTensor();
    torch::NoGradGuard g;
    auto ref = const_cast<torch::jit::Module&>(m.impl->module).forward({x[0]}).toTensor();
    EXPECT_LE((out - ref).abs().max().item<double>() / ref.abs().max().item<double>(), 1e-4) << s;
  }
  ASSERT_EQ(rt.regions()[0].entries.size(), 2u);
  const auto& art = rt.artifacts(0)[1];
  std::string src;
  for (const auto& s : art.stages)
    if (s.file == "30_kernels.cpp") src = s.text;
  EXPECT_NE(src.find("sym[0]"), std::string::npos) << src;  // the batch size is an argument
}

TEST(KilnBackend, WarmCompileInvokesNoCompiler) {
  std::string dir = test::temp_dir();
  ::setenv("KILN_CACHE_DIR", dir.c_str(), 1);
  auto before = codegen::cpp_compiler_stats().invocations;
  auto cold = test::compile_example("block.pt", "2x16x64");
  auto cold_calls = codegen::cpp_compiler_stats().invocations - before;
  EXPECT_GE(cold_calls, 1);
  EXPECT_FALSE(cold.artifacts.cache_hit);
  auto mid = codegen::cpp_compiler_stats().invocations;
  auto warm = test::compile_example("block.pt", "2x16x64");
  EXPECT_EQ(codegen::cpp_compiler_stats().invocations - mid, 0);
  EXPECT_TRUE(warm.artifacts.cache_hit);
  ::unsetenv("KILN_CACHE_DIR");
}

TEST(KilnBackend, UnknownBackendIsAClearError) {
  auto m = model::load_model(test::example("small_mlp.pt"));
  capture::CompileOptions o;
  o.backend = "nope";
  try {
    runtime::CapturedRuntime rt(m, o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("backend 'nope' is not known (known: aot_eager, cudagraphs, eager, kiln"), std::string::npos)
        << e.what();
  }
}

TEST(KilnBackend, BackendsLoadFromASharedLibrary) {
  runtime::load_backend_plugin(KILN_SAMPLE_PLUGIN);
  auto names = runtime::backend_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "sample_eager"), names.end());
  auto cm = test::compile_example("small_mlp.pt", "4x64", "sample_eager");
  EXPECT_EQ(test::relative_error(cm, "4x64"), 0.0);
  try {
    runtime::load_backend_plugin("/nonexistent/plugin.so");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/plugin.so: cannot load the backend plugin"), std::string::npos);
  }
}

// The torchscript peer is a Backend like the others (registered, found by name) that compiles the
// whole module; the captured runtime refuses it by name instead of silently running regions eagerly.
TEST(TorchScriptBackend, CompilesTheWholeModuleAndMatchesEager) {
  auto names = runtime::backend_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "torchscript"), names.end());
  auto peer = runtime::make_backend("torchscript");
  ASSERT_TRUE(peer->whole_model());
  auto model = model::load_model(test::example("small_mlp.pt"));
  auto compiled = peer->compile_model(model, "cpu");
  ASSERT_NE(compiled, nullptr);
  EXPECT_GE(compiled->compile_ms, 0.0);
  torch::NoGradGuard no_grad;
  auto x = torch::randn({8, 64});
  auto eager = const_cast<torch::jit::Module&>(model.impl->module).forward({x}).toTensor();
  auto got = compiled->forward({x}).toTensor();
  EXPECT_TRUE(torch::allclose(got, eager, 1e-4, 1e-5)) << (got - eager).abs().max().item<double>();
  capture::CompileOptions o;
  o.backend = "torchscript";
  auto error = test::error_of([&] { runtime::CapturedRuntime rt(model, o); });
  EXPECT_NE(error.find("backend 'torchscript' compiles the whole module"), std::string::npos) << error;
  EXPECT_NE(error.find("kiln profile --backends torchscript"), std::string::npos) << error;
}
