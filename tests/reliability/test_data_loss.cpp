// Nothing already saved is lost: an output that is also an input is refused, a full disk keeps the
// old session, two writers to one file cannot mix, stdout that fails is an error, and temporaries
// of killed runs are cleaned on the next write; two runs compiling the same new kernels into one
// cache both get them.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "engine/base/error.h"
#include "engine/session/store.h"
#include "tests/support/paths.h"

using namespace kiln;
namespace fs = std::filesystem;

namespace {

std::string kiln_cmd() { return test::binary("app/kiln"); }

std::string copy_of(const std::string& from, const std::string& name) {
  std::string to = test::temp_dir() + "/" + name;
  fs::copy_file(from, to);
  return to;
}

}  // namespace

TEST(DataLoss, AnOutputThatIsTheInputIsRefused) {
  std::string session = copy_of(test::example("sessions/block_h100.kiln"), "s.kiln");
  std::string before = test::read_file(session), out;
  EXPECT_EQ(test::run_command(kiln_cmd() + " report " + session + " --format md -o " + session, out), 1) << out;
  EXPECT_NE(out.find("is also an input"), std::string::npos) << out;
  EXPECT_EQ(test::read_file(session), before);

  std::string log = copy_of(test::data("traces/block_default.log"), "t.log");
  std::string log_before = test::read_file(log);
  EXPECT_EQ(test::run_command(kiln_cmd() + " import " + log + " -o " + log, out), 1) << out;
  EXPECT_NE(out.find("is also an input"), std::string::npos) << out;
  EXPECT_EQ(test::read_file(log), log_before);

  std::string model = copy_of(test::example("small_mlp.pt"), "m.pt");
  std::string model_before = test::read_file(model);
  EXPECT_EQ(test::run_command(kiln_cmd() + " profile " + model + " --input 4x64 --modes eager -o " + model, out), 1)
      << out;
  EXPECT_EQ(test::read_file(model), model_before);
}

TEST(DataLoss, AFullDiskKeepsTheExistingSession) {
  std::string session = copy_of(test::example("sessions/block_h100.kiln"), "s.kiln");
  std::string before = test::read_file(session), out;
  // The file size limit stands in for a full disk: writes past 96 KiB fail (EFBIG) instead of killing.
  for (int kib : {8, 96, 400}) {
    int rc = test::run_command("sh -c \"trap '' XFSZ; ulimit -f " + std::to_string(kib * 2) + "; exec " + kiln_cmd() +
                                   " import " + test::data("traces/block_default.log") + " -o " + session + "\"",
                               out);
    EXPECT_NE(rc, 0) << "limit " << kib << " KiB: " << out;
    EXPECT_EQ(out.find("  wrote "), std::string::npos) << out;
    EXPECT_NE(out.find(session), std::string::npos) << "the error names the output: " << out;
    EXPECT_EQ(test::read_file(session), before) << "limit " << kib << " KiB replaced the session";
  }
  for (const auto& e : fs::directory_iterator(fs::path(session).parent_path()))
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << e.path();
}

TEST(DataLoss, FailingStandardOutputIsAnError) {
  std::string out;
  EXPECT_NE(test::run_command("sh -c '" + kiln_cmd() + " report " + test::example("sessions/block_h100.kiln") +
                                  " --format md > /dev/full'",
                              out),
            0)
      << out;
  EXPECT_NE(out.find("writing to standard output failed"), std::string::npos) << out;
}

TEST(DataLoss, TwoWritersToOneSessionCannotMix) {
  std::string path = test::temp_dir() + "/s.kiln";
  session::Session header;
  header.model.path = "block.pt";
  session::SessionWriter first(path, header);
  session::Session other;
  other.model.path = "small_mlp.pt";
  try {
    session::save_session(path, other);
    FAIL() << "a second writer succeeded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("being written by another Kiln process"), std::string::npos) << e.what();
  }
  try {
    session::SessionWriter second(path, other);
    FAIL() << "a second writer succeeded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("being written by another Kiln process"), std::string::npos) << e.what();
  }
  first.close();
  EXPECT_EQ(session::load_session(path).model.path, "block.pt");
  session::save_session(path, other);  // the lock went with the first writer
  EXPECT_EQ(session::load_session(path).model.path, "small_mlp.pt");
}

TEST(DataLoss, TemporariesOfKilledRunsAreRemovedOnTheNextWrite) {
  std::string dir = test::temp_dir(), path = dir + "/s.kiln";
  // pid 4194305 is above Linux's pid_max limit: no process by that id runs.
  for (const char* name : {"/s.kiln.tmp-4194305", "/s.kiln.tmp-4194305-wal", "/other.kiln.tmp-4194305"})
    std::ofstream(dir + name) << "half a session";
  session::Session s;
  s.model.path = "m.pt";
  session::save_session(path, s);
  EXPECT_FALSE(fs::exists(dir + "/s.kiln.tmp-4194305"));
  EXPECT_FALSE(fs::exists(dir + "/s.kiln.tmp-4194305-wal"));
  EXPECT_TRUE(fs::exists(dir + "/other.kiln.tmp-4194305")) << "only this output's temporaries are touched";
}

// Two `kiln compile` runs of one model at the same moment, with a kernel cache neither has filled: each
// may put its own build of the same library in place between the other's check and load. Both must
// finish with their kernels compiled and checked against eager, whichever library each ends up loading.
TEST(DataLoss, TwoRunsCompilingTheSameNewKernelsBothGetThem) {
  const std::string dir = test::temp_dir();
  std::mt19937_64 rng(std::random_device{}());
  for (int round = 0; round < 3; ++round) {
    const std::string cache = dir + "/cache-" + std::to_string(round) + "-" + std::to_string(rng() % 1000000);
    const std::string run = "KILN_CACHE_DIR=" + cache + " " + kiln_cmd() + " compile " +
                            test::example("small_mlp.pt") + " --input 4x64";
    std::string out;
    const std::string a = dir + "/a.txt", b = dir + "/b.txt", c = dir + "/c.txt";
    ASSERT_EQ(test::run_command("sh -c '" + run + " > " + a + " 2>&1 & p1=$!; " + run + " > " + b + " 2>&1 & p2=$!; " + run +
                                    " > " + c + " 2>&1 & p3=$!; wait $p1 && wait $p2 && wait $p3'",
                                out),
              0)
        << out;
    for (const auto& f : {a, b, c}) {
      std::ifstream in(f);
      std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      EXPECT_NE(text.find("2 kernels, 2 extern calls, 0 fallbacks"), std::string::npos) << f << ":\n" << text;
      EXPECT_NE(text.find(") OK"), std::string::npos) << f << ":\n" << text;
    }
  }
}
