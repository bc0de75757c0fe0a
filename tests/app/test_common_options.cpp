// The options kiln's subcommands share (app/cli/common_options.h): what each group parses, the
// defaults that differ by command, and the exit statuses of run_command.
#include "app/cli/common_options.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <sstream>
#include <stdexcept>

using namespace kiln;       // NOLINT
using namespace kiln::cli;  // NOLINT

namespace {

// Collects what is written to std::cerr while it lives.
class CapturedStderr {
 public:
  CapturedStderr() : saved_(std::cerr.rdbuf(text_.rdbuf())) {}
  ~CapturedStderr() { std::cerr.rdbuf(saved_); }
  std::string text() const { return text_.str(); }

 private:
  std::ostringstream text_;
  std::streambuf* saved_;
};

}  // namespace

TEST(CommonOptions, ModelInputsAndDtype) {
  CLI::App app;
  ModelArgs m;
  add_model_options(app, m);
  app.parse("m.pt -i 4x64 --input 2x3:int64 --dtype float16", false);
  EXPECT_EQ(m.path, "m.pt");
  auto specs = m.specs();
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].dtype, ir::DType::Float16);
  EXPECT_EQ(specs[1].dtype, ir::DType::Int64);
  EXPECT_NE(app.help().find("--dtype TEXT=float32"), std::string::npos) << app.help();
}

TEST(CommonOptions, InputIsRequiredUnlessEachIsACall) {
  CLI::App argument;
  ModelArgs a;
  add_model_options(argument, a);
  EXPECT_THROW(argument.parse("m.pt", false), CLI::RequiredError);
  CLI::App call;
  ModelArgs c;
  add_model_options(call, c, InputIs::Call);
  EXPECT_NO_THROW(call.parse("m.pt", false));
  EXPECT_NE(call.help().find("One call with one argument"), std::string::npos) << call.help();
}

TEST(CommonOptions, DynamicDefaultsDifferOnlyForCheck) {
  CLI::App app;
  BackendArgs check, compile;
  auto* check_cmd = app.add_subcommand("check");
  auto* compile_cmd = app.add_subcommand("compile");
  add_backend_options(*check_cmd, check, kCheckDynamicDefault);
  add_backend_options(*compile_cmd, compile, kDynamicDefault);
  app.parse("check", false);
  EXPECT_EQ(check.dynamic, "false");
  EXPECT_EQ(compile.dynamic, "auto");
  EXPECT_NE(check_cmd->help().find("--dynamic TEXT=false"), std::string::npos) << check_cmd->help();
  EXPECT_NE(compile_cmd->help().find("--dynamic TEXT=auto"), std::string::npos) << compile_cmd->help();

  api::CompileOptions checked, compiled;
  check.apply(checked);
  compile.apply(compiled);
  EXPECT_EQ(checked.dynamic, std::optional<bool>(false));
  EXPECT_EQ(compiled.dynamic, std::nullopt);
  EXPECT_EQ(compiled.backend, "kiln");
  EXPECT_EQ(compiled.mode, "default");
}

TEST(CommonOptions, BackendOptionsAreCheckedWhenApplied) {
  CLI::App app;
  BackendArgs b;
  add_backend_options(app, b, kDynamicDefault);
  app.parse("--backend eager --mode max-autotune --dynamic true", false);
  api::CompileOptions o;
  b.apply(o);
  EXPECT_EQ(o.backend, "eager");
  EXPECT_EQ(o.mode, "max-autotune");
  EXPECT_EQ(o.dynamic, std::optional<bool>(true));
  b.mode = "fast";
  EXPECT_THROW(b.apply(o), Error);
  b.mode = "default";
  b.dynamic = "maybe";
  EXPECT_THROW(b.apply(o), Error);
}

TEST(CommonOptions, DeviceDefaults) {
  CLI::App compile, profile;
  std::string cpu, autodetect;
  add_device_option(compile, cpu, DeviceDefault::Cpu);
  add_device_option(profile, autodetect, DeviceDefault::Auto);
  EXPECT_EQ(cpu, "cpu");
  EXPECT_EQ(autodetect, "auto");
  EXPECT_NE(profile.help().find("auto (cuda when available)"), std::string::npos) << profile.help();
}

TEST(RunCommand, ExitStatuses) {
  CapturedStderr err;
  EXPECT_EQ(run_command({nullptr, [] { return 0; }}), 0);
  EXPECT_EQ(run_command({nullptr, [] { return kExitOutputsDiffer; }}), 3);
  EXPECT_EQ(err.text(), "");
  EXPECT_EQ(run_command({nullptr, []() -> int { throw Error("m.pt: file not found"); }}), 1);
  EXPECT_EQ(err.text(), "kiln: error: m.pt: file not found\n");
  // kiln check: 1 is a mismatch, so bad input is 2.
  EXPECT_EQ(run_command({nullptr, []() -> int { throw Error("input '4xa': 'a' is not a size"); }, kExitCheckBadInput}),
            2);
}

TEST(RunCommand, AnInternalErrorIsOneLine) {
  if (std::getenv("KILN_BACKTRACE")) GTEST_SKIP() << "KILN_BACKTRACE asks for the whole message";
  CapturedStderr err;
  EXPECT_EQ(run_command({nullptr, []() -> int { throw std::runtime_error("boom\nframe #0: at::foo"); }}), 2);
  EXPECT_EQ(err.text(), "kiln: internal error: boom\n");
}
