// The `kiln` command line, run as a user would run it.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kiln_build_config.h"
#include "tests/support/paths.h"

using namespace kiln;  // NOLINT

namespace {

std::string kiln_cmd() { return test::binary("app/kiln"); }

int run_kiln(const std::string& args, std::string& out) { return test::run_command(kiln_cmd() + " " + args, out); }

}  // namespace

TEST(Cli, HelpAndVersion) {
  std::string out;
  EXPECT_EQ(run_kiln("--help", out), 0);
  EXPECT_NE(out.find("inspect"), std::string::npos) << out;
  EXPECT_EQ(run_kiln("--version", out), 0);
  EXPECT_NE(out.find("kiln 0."), std::string::npos) << out;
  EXPECT_NE(out.find("(git "), std::string::npos) << "--version names the commit: " << out;
  EXPECT_NE(out.find("LibTorch"), std::string::npos) << out;
  EXPECT_EQ(run_kiln("inspect --help", out), 0);
  EXPECT_NE(out.find("--input"), std::string::npos) << out;
  EXPECT_NE(out.find("--dot"), std::string::npos) << out;
}

// The session commands run without LibTorch: `kiln` itself needs none of its libraries, and runs
// kiln-model for the commands that load a model, with their help and exit statuses unchanged.
TEST(Cli, KilnLoadsNoLibTorchAndHandsModelCommandsToKilnModel) {
  std::string out;
  ASSERT_EQ(test::run_command("readelf -d " + kiln_cmd(), out), 0) << out;
  EXPECT_NE(out.find("(NEEDED)"), std::string::npos) << out;
  for (const char* lib : {"libtorch", "libc10", "libtorch_cpu", "libtorch_cuda"})
    EXPECT_EQ(out.find(std::string("[") + lib), std::string::npos) << lib << " in\n" << out;
  ASSERT_EQ(test::run_command("readelf -d " + test::binary("app/kiln-model"), out), 0) << out;
  EXPECT_NE(out.find("[libc10"), std::string::npos) << "kiln-model links LibTorch: " << out;
  // A model command gives kiln-model's own answers: its help, its exit status for a usage error.
  EXPECT_EQ(run_kiln("compile --help", out), 0);
  EXPECT_NE(out.find("--mode"), std::string::npos) << out;
  EXPECT_EQ(run_kiln("compile " + test::example("small_mlp.pt"), out), 2) << out;
  EXPECT_NE(out.find("--input is required"), std::string::npos) << out;
  // Without kiln-model beside it (or in an installation's libexec), one line saying what is missing.
  const std::string dir = test::temp_dir();
  std::filesystem::copy_file(kiln_cmd(), dir + "/kiln");
  EXPECT_EQ(test::run_command(dir + "/kiln inspect " + test::example("small_mlp.pt") + " --input 4x64", out), 1);
  EXPECT_NE(out.find("kiln: error: " + dir + "/kiln-model or "), std::string::npos) << out;
  EXPECT_NE(out.find("kiln-model: not found; the commands that load a model"), std::string::npos) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
  // The session commands still run there.
  EXPECT_EQ(test::run_command(dir + "/kiln stats " + test::example("sessions/block_h100.kiln"), out), 0) << out;
  EXPECT_NE(out.find("# GPU time per kernel"), std::string::npos) << out;
}

TEST(Cli, ControlCharactersFromInputsNeverReachTheTerminal) {
  // A file name carrying a terminal title sequence and a bell, echoed back in the error message.
  std::string out;
  EXPECT_NE(run_kiln("inspect \"$(printf '/nonexistent/\\033]0;owned\\007\\033[2J.pt')\" --input 4", out), 0);
  EXPECT_EQ(out.find('\x1b'), std::string::npos) << out;
  EXPECT_EQ(out.find('\x07'), std::string::npos) << out;
  EXPECT_NE(out.find("\\x1b]0;owned\\x07\\x1b[2J"), std::string::npos) << out;
}

TEST(Cli, InspectBreaky) {
  std::string out;
  ASSERT_EQ(run_kiln("inspect " + test::example("breaky.pt") + " --input 4x64", out), 0) << out;
  EXPECT_NE(out.find("# sample_models.py:42:9: print(\"mid\")\n  prim::Print(\"mid\")"), std::string::npos) << out;
  EXPECT_NE(out.find("in l1: y = torch.relu(self.l1(x))\n  %linear : f32[4, 64] = aten::linear"), std::string::npos)
      << out;
  EXPECT_NE(out.find("in l2: return self.l2(y) * scale"), std::string::npos) << out;
  EXPECT_NE(out.find("parameters  8,320"), std::string::npos) << out;
  EXPECT_NE(out.find("aten::linear  2"), std::string::npos) << out;
}

TEST(Cli, InspectJsonAndDot) {
  std::string dir = test::temp_dir(), out;
  ASSERT_EQ(run_kiln("inspect " + test::example("tiny_resnet.pt") + " --input 1x3x8x8 --json --dot " + dir + "/g.dot", out),
            0)
      << out;
  auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["parameter_count"], 5306);
  EXPECT_EQ(j["op_histogram"]["aten::conv2d"], 3);
  EXPECT_GT(j["graph"]["nodes"].size(), 10u);
  std::string dot = test::read_file(dir + "/g.dot");
  EXPECT_NE(dot.find("cluster_m"), std::string::npos);
  std::string dotprog = KILN_DOT_PROGRAM;
  if (!dotprog.empty() && dotprog.find("NOTFOUND") == std::string::npos) {
    EXPECT_EQ(test::run_command(dotprog + " -Tsvg " + dir + "/g.dot -o " + dir + "/g.svg", out), 0) << out;
  }
}

TEST(Cli, ErrorsAreOneLineAndNameTheInput) {
  std::string out;
  EXPECT_EQ(run_kiln("inspect /nonexistent/model.pt --input 4x64", out), 1);
  EXPECT_EQ(out, "kiln: error: /nonexistent/model.pt: file not found\n");
  EXPECT_EQ(run_kiln("inspect " + test::example("small_mlp.pt") + " --input 4xq", out), 1);
  EXPECT_NE(out.find("input '4xq'"), std::string::npos) << out;
  EXPECT_EQ(run_kiln("inspect " + test::example("small_mlp.pt") + " --input 4x64 --dot /nonexistent/dir/g.dot", out), 1);
  EXPECT_NE(out.find("/nonexistent/dir/g.dot: cannot write"), std::string::npos) << out;
  // A command line that does not parse is a usage error, exit 2, for every command.
  EXPECT_EQ(run_kiln("inspect " + test::example("small_mlp.pt"), out), 2);  // --input is required
  EXPECT_NE(out.find("--input"), std::string::npos) << out;
  EXPECT_EQ(run_kiln("compile " + test::example("small_mlp.pt") + " --no-such-option", out), 2);
  EXPECT_EQ(run_kiln("check " + test::example("small_mlp.pt"), out), 2);
  // A value range that is not [low,high) is one clear error naming the input.
  EXPECT_EQ(run_kiln("inspect " + test::example("small_mlp.pt") + " --input '4x64:int64[5,2)'", out), 1);
  EXPECT_NE(out.find("value range '[5,2)' is empty"), std::string::npos) << out;
}

TEST(Cli, ExplainShapeBranchAndBreaky) {
  std::string out;
  ASSERT_EQ(run_kiln("explain " + test::example("shape_branch.pt") + " --input 2x16 --input 8x16 --input 6x16 --input 3x16",
                     out),
            0)
      << out;
  EXPECT_NE(out.find("[0/1] recompiling region 0: tensor 'x' size mismatch at index 0. expected 2, actual 8"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("graph breaks 0"), std::string::npos) << out;
  ASSERT_EQ(run_kiln("explain " + test::example("breaky.pt") + " --input 4x64 --json", out), 0) << out;
  auto j = nlohmann::json::parse(out.substr(out.find('{')));
  EXPECT_EQ(j["break_count"], 3);
  EXPECT_EQ(j["graph_breaks"][0]["source"]["line"], 42);
  EXPECT_EQ(run_kiln("explain " + test::example("breaky.pt") + " --input 4x64 --fullgraph", out), 1);
  EXPECT_NE(out.find("fullgraph=True"), std::string::npos) << out;
  EXPECT_EQ(run_kiln("explain --help", out), 0);
  EXPECT_NE(out.find("--cache-limit"), std::string::npos);
}

TEST(Cli, InspectRegions) {
  std::string out;
  ASSERT_EQ(run_kiln("inspect " + test::example("breaky.pt") + " --input 4x64 --regions", out), 0) << out;
  EXPECT_NE(out.find("capture regions (3 graph breaks)"), std::string::npos) << out;
}

// A run that fails is kept in the session (and shown in its report); the command says so and exits 1.
TEST(Cli, ProfileKeepsAFailedRunAndExitsNonZero) {
  std::string out, dir = test::temp_dir();
  std::string session = dir + "/eager_fails.kiln";
  std::filesystem::remove(session);
  EXPECT_EQ(run_kiln("profile " + test::example("small_mlp.pt") + " --input 4x63 --device cpu --iters 2 -o " + session, out), 1)
      << out;
  EXPECT_NE(out.find("failed (kept in " + session + ")"), std::string::npos) << out;
  EXPECT_NE(out.find("forward on inputs [4x63]"), std::string::npos) << out;
  ASSERT_TRUE(std::filesystem::exists(session));
  ASSERT_EQ(run_kiln("report " + session + " --format md -o " + dir + "/eager_fails.md", out), 0) << out;
  std::ifstream md(dir + "/eager_fails.md");
  std::string text((std::istreambuf_iterator<char>(md)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("failed: "), std::string::npos) << text;
  EXPECT_NE(text.find("mat1 and mat2 shapes cannot be multiplied"), std::string::npos) << text;
}

// Where eager itself fails, the error names the line of the model's source (TorchScript's original-code
// traceback), and a long status is printed whole.
TEST(Cli, AnEagerFailureNamesTheModelsSourceLine) {
  std::string out, session = test::temp_dir() + "/breaky_fails.kiln";
  std::filesystem::remove(session);
  EXPECT_EQ(run_kiln("profile " + test::example("breaky.pt") + " --input 4x63 --device cpu --iters 2 -o " + session, out), 1);
  EXPECT_NE(out.find("failed at sample_models.py:41 (y = torch.relu(self.l1(x))): RuntimeError: mat1 and mat2 shapes "
                     "cannot be multiplied (4x63 and 64x64)\n"),
            std::string::npos)
      << out;
}

// kiln stats: GPU time per kernel from device records, sorted by time; one line of error for a bad run name.
TEST(Cli, StatsListsGpuKernelsOfARun) {
  std::string out;
  const std::string session = test::example("sessions/block_h100.kiln");
  ASSERT_EQ(run_kiln("stats " + session + " --run default --format json", out), 0) << out;
  auto j = nlohmann::json::parse(out.substr(out.find('{')));
  EXPECT_EQ(j["time_source"], "device");
  int64_t sum = 0;
  for (const auto& k : j["kernels"]) sum += k["total_ns"].get<int64_t>();
  EXPECT_EQ(sum, j["total_ns"].get<int64_t>());
  ASSERT_EQ(run_kiln("stats " + session + " --top 3", out), 0) << out;
  EXPECT_NE(out.find("# GPU time per kernel: reduce-overhead / kiln"), std::string::npos) << out;  // the default: the first compiled run
  EXPECT_NE(out.find("more kernels"), std::string::npos) << out;
  EXPECT_EQ(run_kiln("stats " + session + " --run fastest", out), 1);
  EXPECT_NE(out.find("no run 'fastest'"), std::string::npos) << out;
  EXPECT_EQ(run_kiln("stats " + session + " --format csv", out), 1);
}

// The options the commands share are declared and parsed once (app/cli/common_options.h,
// engine/api/options.h); each command keeps its own defaults and the exit status of a bad value.
TEST(Cli, SharedOptionsKeepEachCommandsDefaultsAndExitStatus) {
  std::string out;
  ASSERT_EQ(run_kiln("check --help", out), 0);
  EXPECT_NE(out.find("--dynamic TEXT=false"), std::string::npos) << out;
  for (const char* cmd : {"compile", "explain"}) {
    ASSERT_EQ(run_kiln(std::string(cmd) + " --help", out), 0);
    EXPECT_NE(out.find("--dynamic TEXT=auto"), std::string::npos) << out;
  }
  ASSERT_EQ(run_kiln("compile --help", out), 0);
  EXPECT_NE(out.find("--device TEXT=cpu"), std::string::npos) << out;
  ASSERT_EQ(run_kiln("profile --help", out), 0);
  EXPECT_NE(out.find("--device TEXT=auto"), std::string::npos) << out;

  // One error line; exit 1, but 2 for check, whose 1 means a mismatch.
  const std::string mlp = test::example("small_mlp.pt"), session = test::temp_dir() + "/unwritten.kiln";
  const std::string dynamic = "kiln: error: --dynamic 'maybe': use auto, true or false\n";
  EXPECT_EQ(run_kiln("compile " + mlp + " --input 4x64 --dynamic maybe", out), 1);
  EXPECT_EQ(out, dynamic);
  EXPECT_EQ(run_kiln("explain " + mlp + " --input 4x64 --dynamic maybe", out), 1);
  EXPECT_EQ(out, dynamic);
  EXPECT_EQ(run_kiln("check " + mlp + " --input 4x64 --dynamic maybe", out), 2);
  EXPECT_EQ(out, dynamic);
  const std::vector<std::string> commands = {"inspect", "explain", "compile", "check", "profile -o " + session};
  for (const auto& cmd : commands) {
    EXPECT_EQ(run_kiln(cmd + " " + mlp + " --input 4x64 --dtype float8", out), cmd == "check" ? 2 : 1) << cmd;
    EXPECT_EQ(out.rfind("kiln: error: --dtype 'float8': unknown dtype (use float32", 0), 0u) << cmd << ": " << out;
  }
  EXPECT_FALSE(std::filesystem::exists(session));
}

TEST(Cli, DiffTwoLogsInEveryFormat) {
  std::string dir = test::temp_dir(), out;
  const std::string a = test::data("traces/block_default.log"), b = test::data("traces/breaky_dynamic.log");
  ASSERT_EQ(run_kiln("diff " + a + " " + b, out), 0) << out;
  EXPECT_NE(out.find("# Kiln diff:"), std::string::npos) << out;
  EXPECT_NE(out.find("## Time by model structure"), std::string::npos) << out;
  ASSERT_EQ(run_kiln("diff " + a + " " + b + " --format json -o " + dir + "/d.json", out), 0) << out;
  auto j = nlohmann::json::parse(test::read_file(dir + "/d.json"));
  EXPECT_TRUE(j["breaks"].is_array());
  EXPECT_FALSE(j["breaks"].empty());
  ASSERT_EQ(run_kiln("diff " + a + " " + b + " --format html -o " + dir + "/d.html", out), 0) << out;
  EXPECT_NE(test::read_file(dir + "/d.html").find("script-src 'none'"), std::string::npos);
}

TEST(Cli, DiffBadInputIsOneErrorNamingIt) {
  std::string out;
  EXPECT_EQ(run_kiln("diff /nonexistent/a.kiln " + test::data("traces/block_default.log"), out), 1) << out;
  EXPECT_NE(out.find("kiln: error: /nonexistent/a.kiln: file not found"), std::string::npos) << out;
  EXPECT_EQ(run_kiln("diff " + test::data("traces/block_default.log") + " " + test::data("traces/block_default.log") +
                         " --format pdf",
                     out),
            1)
      << out;
  EXPECT_NE(out.find("--format 'pdf'"), std::string::npos) << out;
}

// --row-stages separate keeps the stages around a row kernel in kernels of their own (an A/B of that fusion):
// GPT-2 at 256 rows runs more kernels so, with the same check against eager; a bad value is one clear error.
TEST(Cli, CompileRowStagesSeparateGivesTheStagesTheirOwnKernels) {
  auto kernels = [](const std::string& out) {
    const auto at = out.find(" kernels, ");
    const auto from = out.rfind("-> ", at);
    return at == std::string::npos || from == std::string::npos ? -1 : std::stoi(out.substr(from + 3, at - from - 3));
  };
  const std::string model = test::data("corpus/gpt2_ids.pt") + " --input '4x64:int64[0,100)' --checks 1";
  std::string fused, separate, bad;
  ASSERT_EQ(run_kiln("compile " + model, fused), 0) << fused;
  ASSERT_EQ(run_kiln("compile " + model + " --row-stages separate", separate), 0) << separate;
  EXPECT_GT(kernels(fused), 0) << fused;
  EXPECT_GT(kernels(separate), kernels(fused)) << fused << separate;
  EXPECT_NE(separate.find(") OK"), std::string::npos) << separate;
  EXPECT_EQ(run_kiln("compile " + model + " --row-stages off", bad), 1) << bad;  // as every bad option value
  EXPECT_NE(bad.find("--row-stages 'off': use auto or separate"), std::string::npos) << bad;
}

// --attention: on the CPU, auto leaves BERT bfloat16's attention as written; fused makes each chain one call
// (listed among the externs, its dump line above the loop IR), checked against eager; a bad value is one error.
TEST(Cli, CompileAttentionFusedListsTheCallsAndMatchesEager) {
  const std::string model = test::data("corpus/bert_embeds_bf16.pt") + " --input 2x8x32:bfloat16 --checks 1";
  const std::string dump = test::temp_dir() + "/cli_attention";
  std::string as_written, fused, bad;
  ASSERT_EQ(run_kiln("compile " + model, as_written), 0) << as_written;
  EXPECT_EQ(as_written.find("scaled_dot_product_attention"), std::string::npos) << as_written;
  ASSERT_EQ(run_kiln("compile " + model + " --attention fused --dump " + dump, fused), 0) << fused;
  EXPECT_NE(fused.find("extern kiln::scaled_dot_product_attention -> attn_output (dims(0,2,1,3))"), std::string::npos)
      << fused;
  EXPECT_NE(fused.find(") OK"), std::string::npos) << fused;
  std::ifstream lowered(dump + "/region_0_0/10_lowered.txt");
  std::string first;
  std::getline(lowered, first);
  EXPECT_EQ(first.rfind("# attention: attn_output := softmax(q @ k^T * 0.25 + ", 0), 0u) << first;
  EXPECT_EQ(run_kiln("compile " + model + " --attention sdpa", bad), 1) << bad;
  EXPECT_NE(bad.find("--attention 'sdpa': use auto, fused or separate"), std::string::npos) << bad;
}

// kiln check takes --attention too: GPT-2 bfloat16 with its q, k, v read as columns of one projection matches eager
// (exit 0), kernel by kernel at zero tolerance it names a first mismatch (exit 1), a bad value is bad input (exit 2).
TEST(Cli, CheckThroughTheAttentionCall) {
  const std::string model = test::data("corpus/gpt2_embeds_bf16.pt") + " --input 2x8x32:bfloat16 --attention ";
  std::string ok, exact, bad;
  EXPECT_EQ(run_kiln("check " + model + "fused", ok), 0) << ok;
  EXPECT_NE(ok.find("MATCH: the compiled outputs agree with eager"), std::string::npos) << ok;
  EXPECT_EQ(run_kiln("check " + model + "fused --rtol 0 --atol 0", exact), 1) << exact;
  EXPECT_NE(exact.find("<- first"), std::string::npos) << exact;
  EXPECT_EQ(run_kiln("check " + model + "sdpa", bad), 2) << bad;
  EXPECT_NE(bad.find("--attention 'sdpa': use auto, fused or separate"), std::string::npos) << bad;
}

// --pool-windows on makes ResNet's stem pooling (in the ResNet-18 miniature) one window kernel with its batch norm
// and ReLU inside on the CPU, checked against eager by compile and by kiln check; off (the CPU's default) keeps
// it a reduction over each window; a bad value is one clear error (compile exit 1, check exit 2).
TEST(Cli, PoolWindowsMakeTheStemPoolingOneWindowKernel) {
  const std::string model = test::data("corpus/resnet18.pt") + " --input 2x3x32x32";
  std::string windows, reduction, checked, bad, bad_check;
  ASSERT_EQ(run_kiln("compile " + model + " --checks 1 --pool-windows on", windows), 0) << windows;
  EXPECT_NE(windows.find("kernel k0_max_pool2d fuses 3:"), std::string::npos) << windows;
  EXPECT_NE(windows.find(") OK"), std::string::npos) << windows;
  ASSERT_EQ(run_kiln("compile " + model + " --checks 1 --pool-windows off", reduction), 0) << reduction;
  EXPECT_NE(reduction.find("_row_max_pool2d fuses"), std::string::npos) << reduction;
  EXPECT_EQ(run_kiln("check " + model + " --pool-windows on", checked), 0) << checked;
  EXPECT_NE(checked.find("MATCH: the compiled outputs agree with eager"), std::string::npos) << checked;
  EXPECT_EQ(run_kiln("compile " + model + " --pool-windows taps", bad), 1) << bad;
  EXPECT_NE(bad.find("--pool-windows 'taps': use auto, on or off"), std::string::npos) << bad;
  EXPECT_EQ(run_kiln("check " + model + " --pool-windows taps", bad_check), 2) << bad_check;
  EXPECT_NE(bad_check.find("--pool-windows 'taps': use auto, on or off"), std::string::npos) << bad_check;
}

// Who computes each 16-bit product on the GPU, said on its extern line (runtime/cuda/half_gemm.h): BERT bfloat16's
// miniature built for sm_90 (two layers of six linears: per layer q, k, v and the output projection of 2·1024·32·32
// flop and the feed-forward pair's two of 2·1024·32·64) leaves them to cuBLAS by default (no line says so: nothing
// changed). With --products kiln, Kiln's kernel gets the products it takes in any mode: not q, k and v, whose bias
// stays in their call (their reader is the attention call, which cannot add it), nor attention's batched matmuls
// when it is written out (--attention separate; q, k and v are plain products then). In default mode
// KILN_OWN_PRODUCT_MAX_GFLOP gives it those within the bound (each one above says why cuBLAS); --products library
// overrides the bound; values that are not ones are refused before anything compiles.
TEST(Cli, CompileSaysWhoComputesEachSixteenBitProduct) {
  std::string out;
  const std::string bert = test::data("corpus/bert_embeds_bf16.pt") + " --input 16x64x32:bfloat16 --checks 1";
  EXPECT_NE(run_kiln("compile " + bert + " --products cublas", out), 0) << out;
  EXPECT_NE(out.find("--products 'cublas': use auto, library or kiln"), std::string::npos) << out;
  std::string bad;
  EXPECT_NE(test::run_command("KILN_OWN_PRODUCT_MAX_GFLOP=lots " + kiln_cmd() + " compile " + bert, bad), 0)
      << bad;
  EXPECT_NE(bad.find("KILN_OWN_PRODUCT_MAX_GFLOP='lots': a positive number of Gflop"), std::string::npos) << bad;
  EXPECT_EQ(bad.find("Region"), std::string::npos) << bad;  // refused before compiling
#if KILN_WITH_CUDA
  auto count = [](const std::string& text, const std::string& what) {
    int n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  };
  auto compile = [&](const std::string& env, const std::string& args) {
    std::string printed;
    EXPECT_EQ(test::run_command(env + " " + kiln_cmd() + " compile " + bert + " --cuda-arch sm_90 " + args, printed), 0)
        << printed;
    return printed;
  };
  out = compile("", "");
  EXPECT_EQ(count(out, "extern aten::linear"), 12) << out;
  EXPECT_EQ(count(out, "tensor-core product"), 0) << out;
  out = compile("", "--mode reduce-overhead --products kiln");
  EXPECT_EQ(count(out, "(Kiln's tensor-core product, 0.0021 Gflop)"), 2) << out;
  EXPECT_EQ(count(out, "(Kiln's tensor-core product, 0.00419 Gflop)"), 4) << out;
  EXPECT_EQ(count(out, "(cuBLAS: its bias added in the same call)"), 6) << out;
  EXPECT_NE(out.find("own products"), std::string::npos) << out;  // the kernels built for sm_90 too: a stage of its own
  out = compile("", "--products kiln --attention separate");
  EXPECT_EQ(count(out, "(Kiln's tensor-core product, "), 12) << out;
  EXPECT_EQ(count(out, "extern aten::matmul"), 4) << out;
  EXPECT_EQ(count(out, "(cuBLAS: a batched product)"), 4) << out;
  out = compile("KILN_OWN_PRODUCT_MAX_GFLOP=0.01", "");
  EXPECT_EQ(count(out, "(Kiln's tensor-core product, "), 6) << out;
  out = compile("KILN_OWN_PRODUCT_MAX_GFLOP=0.003", "");
  EXPECT_EQ(count(out, "(Kiln's tensor-core product, 0.0021 Gflop)"), 2) << out;
  EXPECT_EQ(count(out, "(cuBLAS: 0.00419 Gflop, above Kiln's products' bound)"), 4) << out;
  out = compile("KILN_OWN_PRODUCT_MAX_GFLOP=0.001", "");
  EXPECT_EQ(count(out, "above Kiln's products' bound)"), 6) << out;
  out = compile("KILN_OWN_PRODUCT_MAX_GFLOP=0.01", "--products library");
  EXPECT_EQ(count(out, "tensor-core product"), 0) << out;
#endif
}

// Each CUDA function's registers and local memory, read from its binary (codegen/cuda/cubin_info.h) with no GPU:
// ConvNeXt-T's miniature at 224x224 in default mode has every kernel line name its registers and no function with a
// stack frame (the default forms of its 7x7 windows fit in registers); the same figures from a fresh compile and from
// the kernel cache; in max-autotune the functions are the kernels and their forms, and the local-memory line names
// exactly the functions whose JSON record has a stack frame.
TEST(Cli, CompileSaysEachKernelsRegistersAndLocalMemory) {
#if KILN_WITH_CUDA
  const std::string model = test::data("corpus/convnext_tiny.pt") + " --input 1x3x224x224 --checks 1 --cuda-arch sm_90";
  const std::string cache = "KILN_CACHE_DIR=" + test::temp_dir() + "/cache ";
  auto functions = [](const std::string& printed) {
    auto j = nlohmann::json::parse(printed.substr(printed.find('{')));
    std::map<std::string, std::pair<int, int64_t>> out;
    for (const auto& f : j["regions"].at(0)["functions"])
      out[f["name"].get<std::string>()] = {f["registers"].get<int>(), f["stack_bytes"].get<int64_t>()};
    return std::make_pair(out, j["regions"].at(0)["kernels"]);
  };
  std::string text, fresh, cached;
  ASSERT_EQ(test::run_command(cache + kiln_cmd() + " compile " + model, text), 0) << text;
  EXPECT_EQ(text.find("local memory per thread"), std::string::npos) << text;
  int kernel_lines = 0;
  for (size_t at = text.find("\n  kernel "); at != std::string::npos; at = text.find("\n  kernel ", at + 1)) {
    ++kernel_lines;
    const std::string line = text.substr(at + 1, text.find('\n', at + 1) - at - 1);
    EXPECT_NE(line.find(" registers)"), std::string::npos) << line;
  }
  EXPECT_GT(kernel_lines, 5) << text;
  ASSERT_EQ(test::run_command(cache + kiln_cmd() + " compile " + model + " --json", cached), 0) << cached;
  ASSERT_EQ(test::run_command("KILN_CACHE_DIR=" + test::temp_dir() + "/empty " + kiln_cmd() + " compile " + model + " --json", fresh), 0)
      << fresh;
  const auto [from_cache, kernels] = functions(cached);
  EXPECT_EQ(from_cache, functions(fresh).first);
  ASSERT_EQ(from_cache.size(), kernels.size());
  for (const auto& k : kernels) {
    auto f = from_cache.find(k["name"].get<std::string>());
    ASSERT_NE(f, from_cache.end()) << k.dump();
    EXPECT_EQ(k["registers"].get<int>(), f->second.first) << k.dump();
    EXPECT_GT(f->second.first, 0) << k.dump();
    EXPECT_EQ(f->second.second, 0) << k.dump();
  }
  std::string autotune_text, autotune_json;
  ASSERT_EQ(test::run_command(cache + kiln_cmd() + " compile " + model + " --mode max-autotune", autotune_text), 0) << autotune_text;
  ASSERT_EQ(test::run_command(cache + kiln_cmd() + " compile " + model + " --mode max-autotune --json", autotune_json), 0)
      << autotune_json;
  const auto [forms, autotune_kernels] = functions(autotune_json);
  EXPECT_GT(forms.size(), autotune_kernels.size());
  int with_stack = 0;
  for (const auto& [name, res] : forms) {
    EXPECT_GT(res.first, 0) << name;
    if (res.second > 0) {
      ++with_stack;
      if (with_stack <= 8)
        EXPECT_NE(autotune_text.find(name + " " + std::to_string(res.second) + " B (" + std::to_string(res.first) + " registers)"),
                  std::string::npos)
            << name << "\n" << autotune_text;
    }
  }
  EXPECT_EQ(autotune_text.find("local memory per thread") != std::string::npos, with_stack > 0) << autotune_text;
#else
  GTEST_SKIP() << "built without CUDA";
#endif
}

// --cuda-arch builds the CUDA kernels a GPU would get, here, without one: BERT's miniature (two layers) runs
// eagerly on the cpu, its region's kernels compiled by NVRTC for sm_90, the second layer's assembled from the first
// one's PTX; with KILN_SHARED_UNITS=0 none is. An architecture that is not one, or a GPU device, is refused.
TEST(Cli, CompileBuildsCudaKernelsWithoutAGpu) {
  std::string out;
  const std::string bert = test::data("corpus/bert_ids.pt") + " --input '8x64:int64[0,100)' --checks 1";
  EXPECT_EQ(run_kiln("compile " + bert + " --cuda-arch 'sm_90;touch x'", out), 1) << out;
  EXPECT_NE(out.find("--cuda-arch 'sm_90;touch x': use sm_"), std::string::npos) << out;
  EXPECT_EQ(run_kiln("compile " + bert + " --cuda-arch sm_90 --backend eager", out), 1) << out;
  EXPECT_NE(out.find("it needs --backend kiln"), std::string::npos) << out;
#if KILN_WITH_CUDA
  const std::string dir = test::temp_dir();
  ASSERT_EQ(run_kiln("compile " + bert + " --cuda-arch sm_90 --dump " + dir + "/dump", out), 0) << out;
  EXPECT_NE(out.find("note: CUDA kernels built for sm_90, not run: the region runs eagerly here"), std::string::npos) << out;
  EXPECT_NE(out.find("the regions ran eagerly here: their CUDA kernels were built for sm_90"), std::string::npos) << out;
  EXPECT_NE(out.find("CUDA compiler invocations"), std::string::npos) << out;
  EXPECT_NE(test::read_file(dir + "/dump/region_0_0/30_kernels.cu").find("__global__"), std::string::npos);
  // From an empty kernel cache: the second layer's kernels only assembled; none with sharing off.
  std::string shared, whole;
  ASSERT_EQ(test::run_command("KILN_CACHE_DIR=" + dir + "/c1 " + kiln_cmd() + " compile " + bert + " --cuda-arch sm_90", shared), 0)
      << shared;
  EXPECT_NE(shared.find(" of them only assembled (the same code as another kernel"), std::string::npos) << shared;
  ASSERT_EQ(test::run_command("KILN_CACHE_DIR=" + dir + "/c2 KILN_SHARED_UNITS=0 " + kiln_cmd() + " compile " + bert +
                                  " --cuda-arch sm_90",
                              whole),
            0)
      << whole;
  EXPECT_NE(whole.find("compiler: "), std::string::npos) << whole;
  EXPECT_EQ(whole.find("only assembled"), std::string::npos) << whole;
  EXPECT_EQ(run_kiln("compile " + bert + " --cuda-arch sm_90 --device cuda", out), 1) << out;
#endif
}
