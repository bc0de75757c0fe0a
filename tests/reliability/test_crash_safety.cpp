// Crash safety: `kiln profile` SIGKILLed at random moments, again and again, leaves a session that
// opens (or no file at all, when killed before the header was committed) and holds only complete runs,
// in the order the profile makes them (store.h: each run is committed with its timeline in one
// transaction).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <random>
#include <set>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "engine/base/error.h"
#include "engine/session/store.h"
#include "tests/support/paths.h"

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

// Starts `kiln profile ...` as a child (stdout/stderr to /dev/null); returns its pid.
pid_t start_profile(const std::string& out) {
  std::string bin = kiln::test::binary("app/kiln"), model = kiln::test::example("small_mlp.pt");
  std::vector<std::string> args = {bin, "profile", model, "--input", "4x64", "--modes", "eager,default",
                                   "--backends", "aot_eager,torchscript", "--iters", "200", "-o", out};
  pid_t pid = ::fork();
  if (pid == 0) {
    FILE* devnull = std::fopen("/dev/null", "w");
    if (devnull) {
      ::dup2(::fileno(devnull), 1);
      ::dup2(::fileno(devnull), 2);
    }
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  return pid;
}

// The planned order of runs: eager first, then default/kiln, then each peer backend.
const std::vector<std::pair<std::string, std::string>> kPlan = {
    {"eager", "eager"}, {"default", "kiln"}, {"default", "aot_eager"}, {"default", "torchscript"}};

void check_session(const std::string& path, int round, std::string* summary) {
  if (!fs::exists(path)) {
    *summary += "-";  // killed before the header was committed
    return;
  }
  std::string out;
  int rc = kiln::test::run_command(kiln::test::binary("app/kiln") + " report " + path + " --format json -o " + path +
                                       ".json",
                                   out);
  ASSERT_EQ(rc, 0) << "round " << round << ": the session does not open: " << out;
  kiln::session::Session s;
  ASSERT_NO_THROW(s = kiln::session::load_session(path)) << "round " << round;
  ASSERT_LE(s.runs.size(), kPlan.size()) << "round " << round;
  std::set<int> ids;
  for (size_t i = 0; i < s.runs.size(); ++i) {
    const auto& r = s.runs[i];
    SCOPED_TRACE("round " + std::to_string(round) + ", run " + std::to_string(i));
    EXPECT_EQ(r.mode, kPlan[i].first);
    EXPECT_EQ(r.backend, kPlan[i].second);
    EXPECT_EQ(r.status, "ok");
    EXPECT_EQ(r.latency.iterations, 200);  // a complete measurement, never a partial one
    EXPECT_GT(r.latency.median_ms, 0);
    ids.insert(r.id);
  }
  for (const auto& e : s.timeline)
    if (e.run >= 0) EXPECT_TRUE(ids.count(e.run)) << "round " << round << ": timeline event of a run not stored";
  *summary += std::to_string(s.runs.size());
}

}  // namespace

TEST(CrashSafety, ProfileKilledAtRandomMomentsLeavesOpenableSessions) {
  std::string dir = kiln::test::temp_dir();
  // How long one undisturbed profile takes: kills are spread over [0, 1.2 x that].
  std::string ref = dir + "/ref.kiln";
  auto t0 = Clock::now();
  pid_t pid = start_profile(ref);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "an undisturbed profile failed";
  auto full = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0).count();
  ASSERT_EQ(kiln::session::load_session(ref).runs.size(), kPlan.size());

  std::mt19937 rng(12345);
  std::uniform_int_distribution<int64_t> when(0, full * 12 / 10);
  const int rounds = 24;
  std::string summary;  // runs found per round ("-" = no file)
  // 50 s, or more where one profile is slow (a sanitized build, a loaded machine): each round is at
  // most one profile plus reopening what it left.
  auto budget = std::max<int64_t>(50'000'000, 3 * rounds * full);
  auto deadline = Clock::now() + std::chrono::microseconds(budget);
  int done = 0;
  for (int round = 0; round < rounds && Clock::now() < deadline; ++round, ++done) {
    std::string out = dir + "/killed" + std::to_string(round) + ".kiln";
    auto start = Clock::now();
    pid = start_profile(out);
    if (round % 2 == 0) {
      // Any moment, loading included.
      std::this_thread::sleep_for(std::chrono::microseconds(when(rng)));
    } else {
      // Most of the time goes to starting LibTorch: every other round, wait for the header and
      // kill while runs are being measured and committed.
      while (!fs::exists(out) && Clock::now() - start < std::chrono::microseconds(full * 2))
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      auto spent = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count();
      int64_t left = std::max<int64_t>(1000, full - spent);
      std::this_thread::sleep_for(std::chrono::microseconds(
          std::uniform_int_distribution<int64_t>(0, left)(rng)));
    }
    ::kill(pid, SIGKILL);
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    check_session(out, round, &summary);
    if (HasFatalFailure()) return;
    summary += " ";
  }
  EXPECT_GE(done, 20) << "too few rounds in the time allowed";
  std::cout << "runs found after each kill: " << summary << "\n";
}
