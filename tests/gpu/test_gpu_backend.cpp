// GPU tests (label "gpu"): every example model on the CUDA device in default, reduce-overhead and
// max-autotune, and the cudagraphs peer, against LibTorch eager on the same device. Without a GPU
// each test skips and says why.
#include <gtest/gtest.h>
#include "kiln_build_config.h"

#include <ATen/Context.h>
#include <torch/csrc/jit/runtime/print_handler.h>

#include "engine/base/error.h"
#include "engine/model/model_impl.h"
#include "engine/runtime/captured_runtime.h"
#include "engine/runtime/direct_extern.h"
#include "engine/runtime/example_inputs.h"
#include "engine/runtime/float_precision.h"
#include "engine/runtime/tuning_progress.h"
#include "tests/support/gpu_checks.h"
#include "tests/support/paths.h"
#include "tests/support/scripted_models.h"
#if KILN_WITH_CUDA
#include "engine/runtime/cuda/cuda_driver.h"
#if KILN_TORCH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#endif
#include "engine/runtime/cuda/cuda_graph_fn.h"
#include "engine/runtime/cuda/gemm_tuner.h"
#endif

using namespace kiln;

namespace {

using test::rel_error;

at::Tensor cuda_input(const std::string& spec) {
  return runtime::make_inputs({parse_input_spec(spec)})[0].to(torch::kCUDA);
}

// Options for Kiln's own backend in one compile mode.
capture::CompileOptions kiln_options(const std::string& mode) {
  capture::CompileOptions o;
  o.backend = "kiln";
  o.mode = mode;
  return o;
}

struct Case {
  const char* model;
  std::vector<const char*> inputs;
};

const std::vector<Case> kCases = {{"small_mlp.pt", {"8x64", "16x64", "32x64"}}, {"small_mlp_traced.pt", {"8x64"}},
                                  {"gate.pt", {"4x64", "4x64"}}, {"breaky.pt", {"4x64", "4x64"}},
                                  {"block.pt", {"2x16x64", "2x16x64"}}, {"tiny_resnet.pt", {"2x3x16x16"}},
                                  // 160 x 16 pooled rows: the channels-last pooling runs as a column reduction
                                  {"tiny_resnet.pt", {"160x3x8x8"}},
                                  // 640 pooled rows of 1296: the pooling runs in tiles of 8 rows
                                  // (EmitCudaColumns.RowTilesFollowTheRowsAndTheirLength checks it)
                                  {"tiny_resnet.pt", {"40x3x72x72"}},
                                  {"shape_branch.pt", {"8x16", "3x16"}}};

void check_all(const std::string& backend, const std::string& mode, const std::vector<Case>& cases = kCases,
               const std::string& conv_layout = "auto") {
  torch::jit::setPrintHandler([](const std::string&) {});
  for (const auto& c : cases) {
    const std::string name = c.model;
    auto m = model::load_model(name.rfind("corpus/", 0) == 0 ? test::data(name) : test::example(name), "cuda");
    capture::CompileOptions o;
    o.backend = backend;
    o.mode = mode;
    o.conv_layout = conv_layout;
    runtime::CapturedRuntime rt(m, o);
    // The project's tolerance rule (runtime/compare_values.h): float32 1e-4, or TF32's 2e-3 where the model's
    // convolutions may run in TF32 (PyTorch's cuDNN default): max-autotune's cuDNN benchmark mode then picks
    // other algorithms than eager's heuristics, for bias-free convolutions too (tiny_resnet: 1.1e-4 measured).
    const double tol = runtime::tf32_in_effect(m) ? 2e-3 : 1e-4;
    for (const char* spec : c.inputs)
      for (int rep = 0; rep < 3; ++rep) {  // fresh inputs; replays after the first
        auto x = cuda_input(spec);
        std::ostringstream printed;
        auto out = rt.run({x}, &printed)[0].toTensor().clone();
        torch::NoGradGuard g;
        auto ref = const_cast<torch::jit::Module&>(m.impl->module).forward({x}).toTensor();
        EXPECT_LE(rel_error(out, ref), tol) << c.model << " " << spec << " " << backend << "/" << mode;
      }
    for (const auto& r : rt.regions()) {
      const auto& arts = rt.artifacts(r.index);
      for (const auto& a : arts) EXPECT_TRUE(a.note.empty()) << c.model << ": " << a.note;
    }
  }
}

}  // namespace

TEST(GpuBackend, DefaultModeMatchesEager) {
  REQUIRE_GPU();
  check_all("kiln", "default");
}

// Default mode keeps no channels-last copy of the conv weights: each 3x3 weight is copied channels-last by a
// kernel of the region right before its convolution, every call (ResNet-18's miniature, random weights).
TEST(GpuBackend, DefaultModeCopiesConvWeightsInItsOwnKernelsAndMatchesEager) {
  REQUIRE_GPU();
  check_all("kiln", "default", {{"corpus/resnet18.pt", {"4x3x64x64", "2x3x32x32"}}});
  auto m = model::load_model(test::data("corpus/resnet18.pt"), "cuda");
  runtime::CapturedRuntime rt(m, kiln_options("default"));
  rt.run({cuda_input("2x3x64x64")});
  std::string layout;
  for (const auto& a : rt.artifacts(0))
    for (const auto& st : a.stages)
      if (st.file == "20_loops_before_fusion.txt") layout += st.text;
  EXPECT_NE(layout.find("copied channels-last by the region's kernels before their convolutions"), std::string::npos)
      << layout.substr(0, 400);
  EXPECT_EQ(layout.find("constant [8, 8, 3, 3] channels-last"), std::string::npos) << "no copy kept";
}

// Where the conv weights outweigh the activations (ResNet-18's miniature at batch 1), reduce-overhead converts them
// in every call and max-autotune keeps the channels-last copies (speed over memory); both match eager.
TEST(GpuBackend, MaxAutotuneKeepsConvWeightCopiesThatOutweighTheActivations) {
  REQUIRE_GPU();
  check_all("kiln", "max-autotune", {{"corpus/resnet18.pt", {"1x3x32x32"}}});
  auto m = model::load_model(test::data("corpus/resnet18.pt"), "cuda");
  auto layout_of = [&](const char* mode) {
    runtime::CapturedRuntime rt(m, kiln_options(mode));
    rt.run({cuda_input("1x3x32x32")});
    std::string layout;
    for (const auto& a : rt.artifacts(0))
      for (const auto& st : a.stages)
        if (st.file == "20_loops_before_fusion.txt") layout += st.text.substr(0, st.text.find("\n\n"));
    return layout;
  };
  const std::string ro = layout_of("reduce-overhead"), ma = layout_of("max-autotune");
  EXPECT_NE(ro.find("# conv weights: converted by each call"), std::string::npos) << ro.substr(0, 400);
  EXPECT_NE(ma.find("# conv weights: channels-last copies kept"), std::string::npos) << ma.substr(0, 400);
}

// Squeeze-excitation blocks (torchvision's mobilenet_v3_small, random weights): each pooling and its
// [N, C, 1, 1] view, in every mode (max-autotune races the row tiles, partial ones for 3 images,
// against the other row forms).
// Its 52 convolutions run on cuDNN with TF32 allowed by default, channels-last under Kiln and not in
// eager: different algorithms, whose TF32 rounding alone came to 1.08e-4 once. Full float32 here, so
// the 1e-4 bound checks Kiln's kernels.
TEST(GpuBackend, SqueezeExcitationBlocksMatchEager) {
  REQUIRE_GPU();
  auto& ctx = at::globalContext();
  const bool tf32 = ctx.allowTF32CuDNN();
  ctx.setAllowTF32CuDNN(false);
  const std::vector<Case> se = {{"corpus/mobilenet_v3_small.pt", {"3x3x64x64"}}};
  for (const char* mode : {"default", "reduce-overhead", "max-autotune"}) check_all("kiln", mode, se);
  ctx.setAllowTF32CuDNN(tf32);
}

// A transposing kernel's shared-memory tiles (partial ones too: 40 and 48 are no multiples of
// 32) give eager's values in float32 and bfloat16, with and without CUDA graphs.
TEST(GpuBackend, TransposingKernelsInTilesMatchEager) {
  REQUIRE_GPU();
  auto m = model::load_model(
      test::scripted_model("transpose12", "def forward(self, x):\n    return x.transpose(1, 2) * 2.0 + 1.0\n"), "cuda");
  for (const char* mode : {"default", "reduce-overhead"})
    for (const char* spec : {"4x48x40", "4x48x40:bfloat16", "3x33x97"}) {
      runtime::CapturedRuntime rt(m, kiln_options(mode));
      for (int rep = 0; rep < 3; ++rep) {
        auto x = cuda_input(spec);
        auto out = rt.run({x})[0].toTensor().clone();
        torch::NoGradGuard g;
        auto ref = runtime::eager_call(const_cast<torch::jit::Module&>(m.impl->module), {x}).toTensor();
        EXPECT_EQ(rel_error(out, ref), 0.0) << mode << " " << spec;  // a copy times 2 plus 1: exact
      }
    }
}

// A row kernel's stages at 256 and 512 rows (fusion::FusionOptions::stage_rows): the stored add written by the
// layer norm's first stage (in registers in the warp form; rows of 48, so the last lane step is ragged), its output
// viewed 2-d as a folded epilogue, the softmax after it writing over its input; every mode, float32 against
// eager, bfloat16 and float16 (their first stage kept in registers rounded as stored) against the float32 result
// with eager's own 16-bit error as the yardstick.
TEST(GpuBackend, RowKernelStagesMatchEager) {
  REQUIRE_GPU();
  auto m = model::load_model(test::scripted_model("row_stages_gpu", R"JIT(
def forward(self, x):
    h = torch.sin(x) + x
    y = torch.layer_norm(h, [48])
    z = y.view(-1, 48) + h.view(-1, 48)
    return torch.softmax(z * 2.0, 1)
)JIT"),
                             "cuda");
  for (const char* mode : {"default", "reduce-overhead", "max-autotune"})
    for (const char* spec : {"16x16x48", "8x64x48", "16x16x48:bfloat16", "16x16x48:float16"}) {
      runtime::CapturedRuntime rt(m, kiln_options(mode));
      const bool sixteen = std::string(spec).find("float16") != std::string::npos;  // bfloat16 and float16
      auto& module = const_cast<torch::jit::Module&>(m.impl->module);
      for (int rep = 0; rep < 3; ++rep) {
        auto x = cuda_input(spec);
        auto out = rt.run({x})[0].toTensor().clone();
        torch::NoGradGuard g;
        auto ref = runtime::eager_call(module, {x}).toTensor();
        if (!sixteen) {
          EXPECT_LE(rel_error(out, ref), 1e-4) << mode << " " << spec;
          continue;
        }
        // 16-bit: the softmax of logits up to ~10 turns one spacing of a logit into ~3 % of its output (bfloat16),
        // so Kiln and eager differ by a few percent while both are right (test::sixteen_bit_bound).
        auto exact = runtime::eager_call(module, {x.to(at::kFloat)}).toTensor();
        const double eager_err = rel_error(ref, exact);
        EXPECT_LE(rel_error(out, exact), test::sixteen_bit_bound(eager_err, x.scalar_type()))
            << mode << " " << spec << " (eager's " << eager_err << ")";
      }
    }
}

TEST(GpuBackend, ConvChainsMatchEagerInEitherLayout) {
  REQUIRE_GPU();
  const std::vector<Case> convs = {{"tiny_resnet.pt", {"2x3x16x16"}}, {"tiny_resnet.pt", {"160x3x8x8"}}};
  for (const char* mode : {"default", "reduce-overhead"}) {
    check_all("kiln", mode, convs, "channels-last");
    check_all("kiln", mode, convs, "contiguous");
  }
}

// ResNet's stem (conv → relu → 3x3/2 max-pool with padding → conv): the pooling is a generated
// window max over the channels-last conv output, one thread per pooled element at 4x3x32x32.
TEST(GpuBackend, GeneratedMaxPoolMatchesEager) {
  REQUIRE_GPU();
  auto m = model::load_model(test::stem_model(), "cuda");
  // TF32 off for cuDNN: the NHWC and NCHW convolutions would otherwise round differently (~4e-4
  // relative with these unnormalised weights) and hide what the pooling itself does.
  const bool tf32 = at::globalContext().allowTF32CuDNN();
  at::globalContext().setAllowTF32CuDNN(false);
  for (const char* mode : {"default", "reduce-overhead", "max-autotune"})
    for (const char* spec : {"4x3x32x32", "2x3x15x15"}) {
      runtime::CapturedRuntime rt(m, kiln_options(mode));
      for (int rep = 0; rep < 3; ++rep) {
        auto x = cuda_input(spec);
        auto out = rt.run({x})[0].toTensor().clone();
        torch::NoGradGuard g;
        auto ref = runtime::eager_call(const_cast<torch::jit::Module&>(m.impl->module), {x}).toTensor();
        EXPECT_LE(rel_error(out, ref), 1e-4) << mode << " " << spec;
      }
      EXPECT_TRUE(rt.artifacts(0).at(0).fallbacks.empty());
    }
  at::globalContext().setAllowTF32CuDNN(tf32);
}

TEST(GpuBackend, ReduceOverheadMatchesEagerAndReplaysGraphs) {
  REQUIRE_GPU();
  check_all("kiln", "reduce-overhead");
  auto m = model::load_model(test::example("small_mlp.pt"), "cuda");
  runtime::CapturedRuntime rt(m, kiln_options("reduce-overhead"));
  for (const char* s : {"8x64", "8x64", "8x64", "16x64", "16x64", "32x64"}) rt.run({cuda_input(s)});
  int recorded = 0, replayed = 0, new_shape = 0;
  for (const auto& e : rt.events()) {
    if (e.kind != capture::Event::Kind::CudaGraph) continue;
    recorded += e.message.find("recorded") != std::string::npos;
    replayed += e.message.find("replayed") != std::string::npos;
    new_shape += e.message.find("new input shapes") != std::string::npos;
  }
  EXPECT_GE(recorded, 2);
  EXPECT_GE(replayed, 3);
  EXPECT_GE(new_shape, 1);  // the dynamic entry re-records for 32x64 after 16x64
}

#if KILN_TORCH_CUDA
TEST(GpuBackend, ReduceOverheadGraphsOfNewShapesShareOnePoolAndStayBounded) {
  REQUIRE_GPU();
  // A dynamic batch re-records a CUDA graph per new shape: 20 shapes. With one pool per region the
  // pool grows to the largest graph's needs; a private pool per graph would add a 2 MiB segment
  // (at least) for each. At most 16 graphs are kept, the one used longest ago dropped.
  auto m = model::load_model(test::example("small_mlp.pt"), "cuda");
  auto o = kiln_options("reduce-overhead");
  o.dynamic = true;
  runtime::CapturedRuntime rt(m, o);
  auto reserved = [] {
    c10::cuda::device_synchronize();
    return c10::cuda::CUDACachingAllocator::getDeviceStats(c10::cuda::current_device()).reserved_bytes[0].current;
  };
  for (int b = 2; b <= 5; ++b) rt.run({cuda_input(std::to_string(b) + "x64")});  // 1 may specialize
  torch::NoGradGuard g;
  // The eager reference below runs cuBLAS on this stream, whose workspace is made on its first use:
  // made here, so the growth measured is the graphs' (Kiln's own calls run on the capture stream).
  const_cast<torch::jit::Module&>(m.impl->module).forward({cuda_input("5x64")});
  const int64_t before = reserved();
  for (int b = 6; b <= 25; ++b) {
    auto x = cuda_input(std::to_string(b) + "x64");
    auto out = rt.run({x})[0].toTensor().clone();
    auto again = rt.run({x})[0].toTensor();  // a replay of the graph just recorded
    auto ref = const_cast<torch::jit::Module&>(m.impl->module).forward({x}).toTensor();
    EXPECT_LE(rel_error(out, ref), 1e-4) << b;
    EXPECT_LE(rel_error(again, ref), 1e-4) << b;
  }
  const int64_t growth = reserved() - before;
  EXPECT_LT(growth, 8 << 20) << "20 new shapes grew the reserved memory by " << growth << " bytes";
  int recorded = 0, dropped = 0;
  for (const auto& e : rt.events()) {
    if (e.kind != capture::Event::Kind::CudaGraph) continue;
    recorded += e.message.find("recorded") != std::string::npos;
    dropped += e.message.find("dropped") != std::string::npos;
  }
  EXPECT_EQ(recorded, 24);
  EXPECT_EQ(dropped, 24 - 16);
}
#endif

#if KILN_TORCH_CUDA
// A region whose run throws while its CUDA graph records: the capture is ended before the error leaves (left
// open, the stream stayed in capture mode and ending the call's stream join aborted the process), the error
// says what failed, and the next call records again and returns the right values.
TEST(GpuBackend, ARegionThatThrowsWhileRecordingIsAnErrorAndTheNextCallRecordsAgain) {
  REQUIRE_GPU();
  struct Doubling : runtime::CompiledFn {
    const torch::jit::Value *in, *out;
    int calls = 0;
    void run(capture::Interpreter&, capture::Interpreter::Env& env) override {
      if (++calls == 2) throw Error("the region refused to run");  // the first call's recording run
      env[out] = capture::lookup(env, in).toTensor() * 2;
    }
  };
  auto graph = std::make_shared<torch::jit::Graph>();
  auto* x_value = graph->addInput("x");
  auto* y_value = graph->addInput("y");  // stands for the region's output value
  auto inner = std::make_unique<Doubling>();
  inner->in = x_value;
  inner->out = y_value;
  auto* doubling = inner.get();
  const int64_t live = runtime::live_cuda_graphs();
  auto fn = runtime::make_cuda_graph_fn(std::move(inner), {x_value}, {y_value}, doubling);
  capture::Interpreter interp(graph);
  auto x = cuda_input("4x64");
  capture::Interpreter::Env env{{x_value, x}};
  try {
    fn->run(interp, env);
    ADD_FAILURE() << "the failed recording returned";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("recording a CUDA graph failed: the region refused to run"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(runtime::live_cuda_graphs(), live) << "nothing recorded is kept";
  capture::Interpreter::Env again{{x_value, x}};
  fn->run(interp, again);  // records (calls 3 and 4), then replays
  EXPECT_TRUE(torch::equal(capture::lookup(again, y_value).toTensor(), x * 2));
  capture::Interpreter::Env replayed{{x_value, x}};
  fn->run(interp, replayed);
  EXPECT_TRUE(torch::equal(capture::lookup(replayed, y_value).toTensor(), x * 2));
  EXPECT_EQ(doubling->calls, 4) << "warm-up and recording, twice; the replay runs no region code";
  EXPECT_EQ(runtime::live_cuda_graphs(), live + 1);
}
#endif

TEST(GpuBackend, MaxAutotuneMatchesEagerAndStoresCandidates) {
  REQUIRE_GPU();
  check_all("kiln", "max-autotune");
  auto m = model::load_model(test::example("block.pt"), "cuda");
  runtime::CapturedRuntime rt(m, kiln_options("max-autotune"));
  rt.run({cuda_input("2x16x64")});
  const auto& art = rt.artifacts(0).at(0);
  ASSERT_FALSE(art.kernels.empty());
  int with_variants = 0;
  for (const auto& k : art.kernels) {
    // 5 block sizes; pointwise kernels with 4 elements per thread also try 2 and 1 per thread, row
    // kernels both row mappings (a warp or a block per row); GEMMs cuBLAS's linear, cuBLAS's
    // product then the bias, cuBLASLt's timed product then the bias, and 4 template tiles.
    if (k.name.rfind("product_", 0) == 0) {  // a timed product (lt_gemm.h): LibTorch's and cuBLASLt's, per problem
      EXPECT_EQ(k.language, "cublas");
      ASSERT_FALSE(k.autotune.empty()) << k.name;
      EXPECT_NE(k.autotune[0].config.find("LibTorch's product"), std::string::npos) << k.autotune[0].config;
      EXPECT_GT(k.autotune[0].ms, 0) << "block.pt's products are all timed (its batched matmuls have no record)";
      int kept = 0;
      for (const auto& c : k.autotune) kept += c.chosen;
      EXPECT_EQ(kept, 1) << k.name;
      continue;
    }
    const bool gemm = k.name.rfind("gemm_", 0) == 0;
    ASSERT_TRUE(gemm ? k.autotune.size() == 7u
                     : (k.autotune.size() == 5u || k.autotune.size() == 10u || k.autotune.size() == 15u))
        << k.name << ": " << k.autotune.size();
    if (k.name.find("_row_") != std::string::npos) {
      EXPECT_EQ(k.autotune.size(), 10u) << k.name;
      int warp = 0;
      for (const auto& c : k.autotune) warp += c.config.find("one warp per row") != std::string::npos;
      EXPECT_EQ(warp, 5) << k.name;
    }
    if (k.autotune.size() == 15u) {
      ++with_variants;
      for (const char* w : {"elements/thread=4", "elements/thread=2", "elements/thread=1"}) {
        int n = 0;
        for (const auto& c : k.autotune) n += c.config.find(w) != std::string::npos;
        EXPECT_EQ(n, 5) << k.name << " " << w;
      }
    }
    int chosen = 0;
    for (const auto& c : k.autotune) chosen += c.chosen;
    EXPECT_EQ(chosen, 1) << k.name;
    if (gemm) continue;
    // A generated kernel keeps its own launch (the first form, its block size: the table's first timed row at
    // that size) unless a candidate beats it by 3 %; else the fastest.
    const records::AutotuneCandidate* kept = nullptr;
    const records::AutotuneCandidate* fastest = nullptr;
    for (const auto& c : k.autotune) {
      if (c.chosen) kept = &c;
      if (c.ms > 0 && (!fastest || c.ms < fastest->ms)) fastest = &c;
    }
    ASSERT_TRUE(kept && fastest) << k.name;
    if (kept != fastest) {
      EXPECT_GT(fastest->ms, kept->ms * 0.97f) << k.name << ": " << kept->config << " kept over " << fastest->config;
      const bool own = kept->config.find("threads=256") == 0 || kept->config.find("rows in tiles of") != std::string::npos;
      EXPECT_TRUE(own) << k.name << ": " << kept->config << " is not the kernel's own launch";
    }
  }
  EXPECT_GT(with_variants, 0);  // block.pt has pointwise kernels over a 64-wide innermost dimension
}

// max-autotune calls its convolutions as reduce-overhead does, from the region's buffers (direct_extern.h), with
// cuDNN's benchmark mode on around each call only: interpreted instead (ResNet-18 b1 on the H200), each output was
// copied into the region's layout by ATen, 17 copies per call, and the stem ran on an NCHW algorithm.
TEST(GpuBackend, MaxAutotuneCallsItsConvolutionsFromTheRegionsBuffers) {
  REQUIRE_GPU();
  torch::jit::Module net("Convs");
  net.register_parameter("w1", torch::randn({16, 3, 3, 3}), false);
  net.register_parameter("b1", torch::randn({16}), false);
  net.register_parameter("w2", torch::randn({16, 16, 3, 3}), false);
  net.define(R"JIT(
def forward(self, x):
    y = torch.relu(torch.conv2d(x, self.w1, self.b1, [2, 2], [1, 1]))
    return torch.relu(torch.conv2d(y, self.w2, None, [1, 1], [1, 1])) + y
)JIT");
  const std::string path = test::temp_dir() + "/convs.pt";
  net.save(path);
  auto m = model::load_model(path, "cuda");
  const bool benchmark_before = at::globalContext().benchmarkCuDNN();
  auto first_call = [&](const char* mode, const at::Tensor& x, at::Tensor& out) {
    runtime::CapturedRuntime rt(m, kiln_options(mode));
    const uint64_t before = runtime::direct_extern_calls();
    out = rt.run({x})[0].toTensor().clone();
    return runtime::direct_extern_calls() - before;
  };
  auto x = cuda_input("2x3x32x32");
  at::Tensor ro, ma;
  const uint64_t ro_calls = first_call("reduce-overhead", x, ro);
  const uint64_t ma_calls = first_call("max-autotune", x, ma);
  EXPECT_GT(ro_calls, 0u);
  EXPECT_EQ(ma_calls, ro_calls) << "max-autotune's convolutions went through the interpreter";
  EXPECT_EQ(at::globalContext().benchmarkCuDNN(), benchmark_before) << "benchmark mode left on after the call";
  torch::NoGradGuard g;
  auto ref = const_cast<torch::jit::Module&>(m.impl->module).forward({x}).toTensor();
  const double tol = runtime::tf32_in_effect(m) ? 2e-3 : 1e-4;
  EXPECT_LE(rel_error(ma, ref), tol);
  EXPECT_LE(rel_error(ro, ref), tol);
}

// max-autotune races cuBLAS against Kiln's TF32 GEMM template for every linear: with TF32 allowed
// the template's tiles are timed (or rejected when they differ from cuBLAS); with PyTorch's default
// (TF32 off for matmul) no template can run, and linears read by pointwise work leave their bias to
// their readers instead (no GEMM race of their own).
TEST(GpuBackend, MaxAutotuneRacesCublasAgainstTheGemmTemplate) {
  REQUIRE_GPU();
  for (bool tf32 : {true, false}) {
    at::globalContext().setAllowTF32CuBLAS(tf32);
    auto m = model::load_model(test::example("small_mlp.pt"), "cuda");
    runtime::CapturedRuntime rt(m, kiln_options("max-autotune"));
    auto x = cuda_input("64x64");
    auto& module = const_cast<torch::jit::Module&>(m.impl->module);
    auto ref = runtime::eager_call(module, {x}).toTensor();
    for (int call = 0; call < 3; ++call) {  // tune, then replay the chosen candidates
      auto out = rt.run({x})[0].toTensor();
      EXPECT_LT(rel_error(out, ref), tf32 ? 1e-2 : 1e-4) << "tf32=" << tf32 << " call " << call;
    }
    int gemms = 0, products = 0;
    for (const auto& info : rt.regions())
      for (const auto& art : rt.artifacts(info.index))
        for (const auto& k : art.kernels) {
          if (k.name.rfind("product_", 0) == 0) {  // timed products: their race in the record's table
            ++products;
            int kept = 0;
            for (const auto& c : k.autotune) kept += c.chosen;
            EXPECT_EQ(kept, 1) << k.name;
          }
          if (k.name.rfind("gemm_", 0) != 0) continue;
          ++gemms;
          // cuBLAS's linear, cuBLAS's product then the bias (nn.Linear has one), cuBLASLt's timed product
          // then the bias (or why not: LibTorch's product was faster), 4 tiles.
          ASSERT_EQ(k.autotune.size(), 7u) << k.name;
          EXPECT_EQ(k.autotune[0].config.rfind("cuBLAS (LibTorch aten::linear)", 0), 0u) << k.autotune[0].config;
          EXPECT_EQ(k.autotune[1].config.rfind("cuBLAS matrix product, then the bias", 0), 0u) << k.autotune[1].config;
          EXPECT_EQ(k.autotune[2].config.rfind("cuBLASLt matrix product", 0), 0u) << k.autotune[2].config;
          const bool lt_timed = k.autotune[2].ms > 0;
          EXPECT_NE(k.autotune[2].config.find(lt_timed ? ", then the bias" : " - not taken: "), std::string::npos)
              << k.autotune[2].config;
          int chosen = 0, timed = 0;
          for (const auto& c : k.autotune) {
            chosen += c.chosen;
            timed += c.ms > 0;
          }
          EXPECT_EQ(chosen, 1) << k.name;
          if (tf32) {
            EXPECT_EQ(timed, lt_timed ? 7 : 6) << k.name;
          } else {
            // by timing, all exact float32
            EXPECT_TRUE(k.autotune[0].chosen || k.autotune[1].chosen || k.autotune[2].chosen);
            EXPECT_NE(k.autotune[3].config.find("not tried: TF32 is off"), std::string::npos);
          }
        }
    // Without TF32 no template can run: the linears leave their bias to their readers, as in the other
    // modes, and their products are timed as cuBLASLt's candidates against LibTorch's (lt_gemm.h).
    if (tf32) EXPECT_GT(gemms, 0) << "small_mlp has linear layers";
    else EXPECT_EQ(gemms, 0) << "both of small_mlp's linears are read by pointwise work";
    if (!tf32) EXPECT_GT(products, 0) << "their products are timed, and the session shows the race";
  }
  at::globalContext().setAllowTF32CuBLAS(false);
}

// The kernel after a linear runs inside the template's epilogue when the template is chosen
// (forced here, whatever the timings): results still match eager, in max-autotune's CUDA graphs too.
TEST(GpuBackend, GemmTemplateWithTheTailFusedMatchesEager) {
  REQUIRE_GPU();
#if KILN_WITH_CUDA
  at::globalContext().setAllowTF32CuBLAS(true);
  runtime::force_gemm_tile_for_testing(0);
  int tuned = 0;  // kernels and GEMMs whose tuning reported its end
  runtime::ScopedTuningProgress progress([&](const std::string&, int done, int total) { tuned += done == total; });
  for (auto [model, input] : std::vector<std::pair<const char*, const char*>>{{"small_mlp.pt", "64x64"},
                                                                              {"block.pt", "2x16x64"}}) {
    auto m = model::load_model(test::example(model), "cuda");
    runtime::CapturedRuntime rt(m, kiln_options("max-autotune"));
    auto& module = const_cast<torch::jit::Module&>(m.impl->module);
    for (int call = 0; call < 4; ++call) {  // tune (first call), then graph replays on fresh inputs
      auto x = cuda_input(input);
      auto ref = runtime::eager_call(module, {x}).toTensor();
      auto out = rt.run({x})[0].toTensor();
      EXPECT_LT(rel_error(out, ref), 1e-2) << model << " call " << call;
    }
    int fused = 0;
    for (const auto& info : rt.regions())
      for (const auto& art : rt.artifacts(info.index))
        for (const auto& k : art.kernels)
          for (const auto& c : k.autotune) fused += c.chosen && c.config.find(" fused") != std::string::npos;
    EXPECT_GE(fused, 1) << model << ": a tile with the tail kernel fused was chosen";
  }
  EXPECT_GE(tuned, 4) << "max-autotune reports its progress";
  runtime::force_gemm_tile_for_testing(-1);
  at::globalContext().setAllowTF32CuBLAS(false);
#endif
}

TEST(GpuBackend, CudagraphsPeerMatchesEager) {
  REQUIRE_GPU();
  check_all("cudagraphs", "default");
}
