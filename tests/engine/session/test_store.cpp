// The session store: round trip of a real profiled session, clear errors for bad files and other
// schema versions, and crash consistency under SIGKILL.
#include "engine/session/store.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include "engine/base/error.h"
#include "engine/model/model.h"
#include "engine/report/render_json.h"
#include "engine/commands/profile_model.h"
#include "tests/support/paths.h"

using namespace kiln;

namespace {

session::Session profiled(const std::string& path) {
  runtime::ProfileOptions o;
  o.modes = {"eager", "default", "reduce-overhead"};
  o.backends = {"torchscript"};
  o.iters = 5;
  o.device = "cpu";
  return runtime::profile_model(model::load_model(test::example("breaky.pt")), {parse_input_spec("4x64")}, o, path);
}

void expect_error(const std::string& path, const std::string& fragment) {
  try {
    session::load_session(path);
    ADD_FAILURE() << path << " opened";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_EQ(m.rfind(path + ": ", 0), 0u) << m;
    EXPECT_NE(m.find(fragment), std::string::npos) << m;
  }
}

}  // namespace

TEST(Store, ProfiledSessionRoundTripsEveryField) {
  std::string path = test::temp_dir() + "/s.kiln";
  auto s = profiled(path);
  auto loaded = session::load_session(path);
  EXPECT_EQ(report::render_json(loaded), report::render_json(s));
  ASSERT_EQ(loaded.runs.size(), 4u);
  EXPECT_EQ(loaded.breaks.size(), 3u);
  EXPECT_EQ(loaded.breaks[0].info.loc.line, 42);
  EXPECT_EQ(loaded.runs[2].status.rfind("skipped: needs an NVIDIA GPU", 0), 0u);
  EXPECT_GT(loaded.timeline.size(), 10u);
  EXPECT_FALSE(loaded.kernels.empty());
  EXPECT_FALSE(loaded.fusion.empty());
}

TEST(Store, BadFilesGiveOneLineErrors) {
  std::string dir = test::temp_dir();
  expect_error(dir + "/missing.kiln", "file not found");
  std::ofstream(dir + "/garbage.kiln") << "this is not a database, just text that goes on for a while............";
  expect_error(dir + "/garbage.kiln", "not a Kiln session");
  std::ofstream(dir + "/empty.kiln");
  expect_error(dir + "/empty.kiln", "empty file");
  profiled(dir + "/good.kiln");
  std::ifstream in(dir + "/good.kiln", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  std::ofstream(dir + "/cut.kiln", std::ios::binary) << bytes.substr(0, bytes.size() / 3);
  expect_error(dir + "/cut.kiln", "corrupt session file");
}

TEST(Store, OtherSchemaVersionIsNamed) {
  std::string path = test::temp_dir() + "/v.kiln";
  profiled(path);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "UPDATE meta SET value = '99' WHERE key = 'schema_version'", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  expect_error(path, "schema 99");
}

TEST(Store, KilledWriterLeavesEveryFinishedRunReadable) {
  std::string dir = test::temp_dir();
  for (int round = 0; round < 5; ++round) {
    std::string path = dir + "/crash" + std::to_string(round) + ".kiln";
    int pipefd[2];
    ASSERT_EQ(::pipe(pipefd), 0);
    pid_t pid = ::fork();
    if (pid == 0) {
      ::close(pipefd[0]);
      session::Session header;
      header.origin = "crash test";
      session::SessionWriter w(path, header);
      for (int i = 0;; ++i) {
        session::Run r;
        r.mode = "default";
        r.backend = "kiln";
        r.latency.median_ms = i;
        std::vector<session::TimelineEvent> tl(200);
        for (auto& e : tl) e.name = "span";
        w.append_run(r, tl);
        char c = 1;
        if (::write(pipefd[1], &c, 1) != 1) ::_exit(1);
      }
    }
    ::close(pipefd[1]);
    int finished = 0;
    char c;
    while (finished < 3 + round && ::read(pipefd[0], &c, 1) == 1) ++finished;
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    ::close(pipefd[0]);
    auto s = session::load_session(path);
    EXPECT_GE(static_cast<int>(s.runs.size()), finished) << "round " << round;
    for (const auto& r : s.runs) {
      size_t events = 0;
      for (const auto& e : s.timeline) events += e.run == r.id;
      EXPECT_EQ(events, 200u) << "a run with a partial timeline";
    }
  }
}

TEST(SessionWriter, RecordsAutotuneTablesOfStoredKernels) {
  auto dir = kiln::test::temp_dir();
  std::string path = dir + "/tuned.kiln";
  kiln::session::Session s;
  kiln::session::Kernel k;
  k.name = "k0_fused_add_relu";
  k.compile_id = "[0/0]";
  k.language = "cuda";
  s.kernels = {k};
  {
    kiln::session::SessionWriter w(path, s);
    std::vector<kiln::session::AutotuneCandidate> table = {{"threads=128, elements/thread=4", 0.011, false},
                                                          {"threads=256, elements/thread=4", 0.009, true}};
    EXPECT_TRUE(w.record_autotune("k0_fused_add_relu", "[0/0]", table));
    EXPECT_FALSE(w.record_autotune("k9_missing", "[0/0]", table));
    table.pop_back();  // a second record replaces the first
    table[0].chosen = true;
    EXPECT_TRUE(w.record_autotune("k0_fused_add_relu", "[0/0]", table));
    w.close();
  }
  auto back = kiln::session::load_session(path);
  ASSERT_EQ(back.kernels.size(), 1u);
  ASSERT_EQ(back.kernels[0].autotune.size(), 1u);
  EXPECT_EQ(back.kernels[0].autotune[0].config, "threads=128, elements/thread=4");
  EXPECT_DOUBLE_EQ(back.kernels[0].autotune[0].ms, 0.011);
  EXPECT_TRUE(back.kernels[0].autotune[0].chosen);
}
