// The kiln-gui executable as a user starts it: --help and --version need no display; a screenshot of
// a session's environment panel is written from the command line.
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/support/paths.h"

using namespace kiln;

namespace {
std::string gui() { return test::binary("app/gui/kiln-gui"); }
}  // namespace

TEST(GuiBinary, HelpAndVersionWorkWithoutADisplay) {
  std::string out;
  const std::string no_display = "env -u DISPLAY -u WAYLAND_DISPLAY -u QT_QPA_PLATFORM ";
  ASSERT_EQ(test::run_command(no_display + gui() + " --help", out), 0) << out;
  EXPECT_NE(out.find("--screenshot"), std::string::npos) << out;
  EXPECT_NE(out.find("--input"), std::string::npos) << out;
  ASSERT_EQ(test::run_command(no_display + gui() + " --version", out), 0) << out;
  EXPECT_NE(out.find("(git "), std::string::npos) << out;
}

TEST(GuiBinary, ScreenshotOfTheEnvironmentPanel) {
  std::string png = test::temp_dir() + "/env.png", out;
  ASSERT_EQ(test::run_command("QT_QPA_PLATFORM=offscreen " + gui() + " --screenshot " + png +
                                  " --panel environment " + test::example("sessions/block_h100.kiln"),
                              out),
            0)
      << out;
  EXPECT_GT(std::filesystem::file_size(png), 1000u);
}
