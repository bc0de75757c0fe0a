// `kiln check` through the real binary: exit 0 on a match, exit 2 with one clear
// "kiln: error: <input>: <problem>" line on bad input (its exit 1 means a mismatch, tested with an
// injected wrong lowering in tests/engine/runtime/test_check_model.cpp). Rows of docs/bad-inputs.md.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

#include "tests/reliability/kiln_cli.h"
#include "tests/support/paths.h"

using kiln::test::example;

namespace {

using Answer = kiln::test::CliAnswer;

Answer run_check(const std::string& args) { return kiln::test::run_kiln("check " + args); }

// Exit 2 and exactly one line "kiln: error: <input>..." containing `problem`.
void expect_bad_input(const std::string& args, const std::string& input, const std::string& problem) {
  Answer a = run_check(args);
  SCOPED_TRACE("kiln check " + args + "\n" + a.output);
  kiln::test::expect_clean_refusal(a, 2, "kiln: error: " + input, problem);
}

const std::string kMlp = example("small_mlp.pt");

}  // namespace

TEST(CheckCli, MatchingModelExitsZero) {
  Answer a = run_check(kMlp + " --input 4x64 --seed 7");
  EXPECT_EQ(a.status, 0) << a.output;
  EXPECT_NE(a.output.find("MATCH"), std::string::npos) << a.output;
  EXPECT_NE(a.output.find("seed 7"), std::string::npos) << a.output;
}

TEST(CheckCli, ModelWithGraphBreaksMatchesAsJson) {
  Answer a = run_check(example("breaky.pt") + " --input 4x64 --json");
  ASSERT_EQ(a.status, 0) << a.output;
  auto j = nlohmann::json::parse(a.output);
  EXPECT_EQ(j["match"], true);
  EXPECT_NE(j["seed"], 0);
  EXPECT_TRUE(j["first_kernel"].is_null());
}

TEST(CheckCli, FreshSeedIsPrinted) {
  Answer a = run_check(kMlp + " --input 4x64 --json"), b = run_check(kMlp + " --input 4x64 --json");
  ASSERT_EQ(a.status, 0) << a.output;
  ASSERT_EQ(b.status, 0) << b.output;
  EXPECT_NE(nlohmann::json::parse(a.output)["seed"], nlohmann::json::parse(b.output)["seed"]);
}

TEST(BadCheckInput, MissingModel) {
  expect_bad_input("/nonexistent/m.pt --input 4x64", "/nonexistent/m.pt: ", "file not found");
}

TEST(BadCheckInput, NotAModel) {
  std::string path = kiln::test::temp_dir() + "/garbage.pt";
  std::ofstream(path) << "not a zip at all";
  expect_bad_input(path + " --input 4x64", path + ": ", "not a TorchScript archive");
}

TEST(BadCheckInput, WrongShape) {
  expect_bad_input(kMlp + " --input 4x65", kMlp + ": ", "forward on inputs [4x65] failed");
}

TEST(BadCheckInput, TooManyInputs) {
  expect_bad_input(kMlp + " --input 4x64 --input 4x64", kMlp + ": ", "forward takes 1 input (x), 2 given");
}

TEST(BadCheckInput, NotAShape) { expect_bad_input(kMlp + " --input 4xa", "input '4xa': ", "is not a size"); }

TEST(BadCheckInput, NegativeTolerance) {
  expect_bad_input(kMlp + " --input 4x64 --rtol -1", "--rtol -1: ", "a tolerance must be a finite number >= 0");
}

TEST(BadCheckInput, UnknownBackend) {
  expect_bad_input(kMlp + " --input 4x64 --backend nope", "backend 'nope'", "is not known (known: ");
}

TEST(BadCheckInput, UnknownMode) {
  expect_bad_input(kMlp + " --input 4x64 --mode fast", "--mode 'fast': ", "use default, reduce-overhead or max-autotune");
}

TEST(BadCheckInput, UnparsableToleranceIsBadInputToo) {
  Answer a = run_check(kMlp + " --input 4x64 --atol abc");
  EXPECT_EQ(a.status, 2) << a.output;
  EXPECT_NE(a.output.find("--atol"), std::string::npos) << a.output;
}

TEST(BadCheckInput, MissingInputOption) {
  Answer a = run_check(kMlp);
  EXPECT_EQ(a.status, 2) << a.output;
  EXPECT_NE(a.output.find("--input"), std::string::npos) << a.output;
}
