// The session store: round trip of a real profiled session, clear errors for bad files and other
// schema versions, and crash consistency under SIGKILL.
#include "engine/session/store.h"
#include "engine/session/session_rows.h"
#include "engine/session/sqlite_db.h"
#include "engine/session/store_write.h"
#include "engine/session/timeline_blocks.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
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

namespace {

// A value of `n` bytes: a JSON list of strings, with quotes and backslashes escaped inside.
std::string big_list(int seed, size_t n) {
  std::string v = "[";
  for (int i = 0; v.size() < n; ++i)
    v += (i ? "," : "") + std::string("\"[k") + std::to_string(seed) + "] item " + std::to_string(i) +
         ": \\\"quoted\\\" \\\\ ]},{\"";
  return v + "]";
}

// Events whose args share large values (as Inductor's compile events share their cache-key
// components), and args that must be stored whole or split at odd places.
std::vector<session::TimelineEvent> events_with_shared_args() {
  std::vector<std::string> args;
  std::string a = big_list(1, 20000), b = big_list(2, 30000);
  for (int i = 0; i < 6; ++i)  // three rows per shared value, different text around it
    args.push_back("{\"compile_id\":\"" + std::to_string(i) + "/0\",\"components\":" + (i % 2 ? a : b) +
                   ",\"key\":\"k" + std::to_string(i) + "\"}");
  args.push_back("{\"components\":" + a + "}");                          // nothing around the value
  args.push_back("{ \"x\" : 1 , \"components\" : " + b + " , \"y\" : {\"z\":\"}\"} }");  // not minified
  args.push_back("not JSON at all, but long: " + b);                     // stored as it is
  args.push_back("{\"cut\":" + a.substr(0, 15000));                      // an object cut short
  args.push_back("{\"small\":1}");
  args.push_back("");
  std::vector<session::TimelineEvent> events;
  for (size_t i = 0; i < args.size(); ++i) {
    session::TimelineEvent e;
    e.lane = "compile";
    e.name = "span " + std::to_string(i);
    e.category = "compile";
    e.start_ns = static_cast<int64_t>(i) * 1000;
    e.args_json = args[i];
    events.push_back(e);
  }
  return events;
}

// Runs SQL statements on the file with SQLite itself (as another tool would change it).
void sql_exec(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db) << "\n" << sql;
  sqlite3_close(db);
}

int64_t sql_int(const std::string& path, const std::string& query) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, query.c_str(), -1, &st, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  int64_t v = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
  sqlite3_finalize(st);
  sqlite3_close(db);
  return v;
}

std::string sql_text(const std::string& path, const std::string& query) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, query.c_str(), -1, &st, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  std::string v;
  if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
    v = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
  sqlite3_finalize(st);
  sqlite3_close(db);
  return v;
}

}  // namespace

TEST(Store, SharedArgsAreStoredOnceAndReadBackAsWritten) {
  std::string path = test::temp_dir() + "/shared.kiln";
  session::Session s;
  s.timeline = events_with_shared_args();
  session::save_session(path, s);
  auto back = session::load_session(path);
  ASSERT_EQ(back.timeline.size(), s.timeline.size());
  for (size_t i = 0; i < s.timeline.size(); ++i) EXPECT_EQ(back.timeline[i].args_json, s.timeline[i].args_json) << i;
  // The two shared lists are stored once each; the events that hold them keep a few bytes (their
  // head and tail, the 9th and 11th elements of the split form).
  EXPECT_EQ(sql_int(path, "SELECT count(*) FROM args_parts WHERE length(text) >= 20000 AND length(text) < 30100"), 2);
  EXPECT_EQ(sql_int(path, "SELECT count(*) FROM timeline_blocks AS b, json_each(b.events) AS e "
                          "WHERE json_array_length(e.value) = 11"),
            8);
  EXPECT_LT(sql_int(path, "SELECT max(length(json_extract(e.value, '$[8]')) + length(json_extract(e.value, '$[10]'))) "
                          "FROM timeline_blocks AS b, json_each(b.events) AS e WHERE json_array_length(e.value) = 11"),
            100);
  // Readers that know nothing of the split (older Kilns, sqlite3, scripts) read the view.
  EXPECT_EQ(sql_int(path, "SELECT sum(length(args_json)) FROM timeline"),
            [&] {
              int64_t n = 0;
              for (const auto& e : s.timeline) n += static_cast<int64_t>(e.args_json.size());
              return n;
            }());
  EXPECT_EQ(sql_int(path, "SELECT count(*) FROM timeline WHERE args_json IS NULL"), 0);
}

TEST(Store, SessionWriterRunsWithSharedArgsReadBackAsWritten) {
  std::string path = test::temp_dir() + "/writer_shared.kiln";
  auto events = events_with_shared_args();
  session::Session header;
  header.timeline = events;  // session-wide (run -1)
  {
    session::SessionWriter w(path, header);
    session::Run r;
    r.mode = "default";
    EXPECT_EQ(w.append_run(r, events), 0);
    EXPECT_EQ(w.append_run(r, events), 1);
    w.close();
  }
  auto back = session::load_session(path);
  ASSERT_EQ(back.timeline.size(), 3 * events.size());
  for (size_t i = 0; i < back.timeline.size(); ++i) {
    EXPECT_EQ(back.timeline[i].args_json, events[i % events.size()].args_json) << i;
    EXPECT_EQ(back.timeline[i].run, static_cast<int>(i / events.size()) - 1) << i;
  }
}

// A file as Kiln wrote it before the timeline became a view: a plain timeline table.
TEST(Store, FilesWithATimelineTableStillOpen) {
  std::string path = test::temp_dir() + "/plain_timeline.kiln";
  session::Session s;
  s.timeline = events_with_shared_args();
  session::save_session(path, s);
  const char* to_plain_table =
      "CREATE TABLE plain (seq INTEGER PRIMARY KEY, run INTEGER NOT NULL, lane TEXT, name TEXT, category TEXT, "
      "start_ns INTEGER, dur_ns INTEGER, compile_id TEXT, kernel TEXT, correlation INTEGER, args_json TEXT); "
      "INSERT INTO plain SELECT * FROM timeline; DROP VIEW timeline; DROP TABLE timeline_blocks; "
      "DROP TABLE args_parts; ALTER TABLE plain RENAME TO timeline; "
      "CREATE INDEX timeline_by_run ON timeline (run, seq)";
  sql_exec(path, to_plain_table);
  ASSERT_EQ(sql_int(path, "SELECT count(*) FROM sqlite_master WHERE name = 'timeline' AND type = 'table'"), 1);
  auto back = session::load_session(path);
  ASSERT_EQ(back.timeline.size(), s.timeline.size());
  for (size_t i = 0; i < s.timeline.size(); ++i) EXPECT_EQ(back.timeline[i].args_json, s.timeline[i].args_json) << i;
}

// A large session: 4 KiB pages (the blocks' last overflow pages are what large pages would waste),
// blocks of at most kBlockEvents events and about kBlockBytes of text; it reads back as written.
TEST(Store, LargeSessionsRoundTripInBoundedBlocks) {
  std::string path = test::temp_dir() + "/large.kiln";
  session::Session s;
  for (int i = 0; i < 70000; ++i) {
    session::TimelineEvent e;
    e.run = -1;
    e.lane = "host:1";
    e.name = "op " + std::to_string(i);
    e.category = "cpu_op";
    e.start_ns = i;
    e.args_json = "{\"External id\":" + std::to_string(i) + ",\"pad\":\"" + std::string(i % 3 ? 10 : 1000, 'p') + "\"}";
    s.timeline.push_back(std::move(e));
  }
  session::save_session(path, s);
  EXPECT_EQ(sql_int(path, "PRAGMA page_size"), 4096);
  EXPECT_EQ(sql_text(path, "PRAGMA journal_mode"), "wal");  // written without the log, finished with it
  EXPECT_EQ(sql_int(path, "SELECT sum(count) FROM timeline_blocks"), 70000);
  EXPECT_LE(sql_int(path, "SELECT max(count) FROM timeline_blocks"), static_cast<int64_t>(session::kBlockEvents));
  EXPECT_LE(sql_int(path, "SELECT max(length(events)) FROM timeline_blocks"), static_cast<int64_t>(session::kBlockBytes));
  EXPECT_GE(sql_int(path, "SELECT min(count) FROM timeline_blocks WHERE first_seq + count < 70000"), 100);
  auto back = session::load_session(path);
  ASSERT_EQ(back.timeline.size(), s.timeline.size());
  for (size_t i = 0; i < s.timeline.size(); i += 997) EXPECT_EQ(back.timeline[i].args_json, s.timeline[i].args_json);
  std::string small = test::temp_dir() + "/small.kiln";
  session::save_session(small, session::Session{});
  EXPECT_EQ(sql_int(small, "PRAGMA page_size"), 4096);
  EXPECT_EQ(sql_text(small, "PRAGMA journal_mode"), "wal");
}

// A timeline of 20,000 events or more has its blocks encoded by two threads: every event reads back
// as written, in order, with its run (runs in stretches, and for a while changing every event: a
// block per event); shared args of the whole timeline stored once; the view agrees; no
// temporary file is left.
TEST(Store, TwoEncodersWriteALargeTimelineAsOne) {
  const std::string dir = test::temp_dir();
  const std::string path = dir + "/two_encoders.kiln";
  session::Session s;
  for (int r = 0; r < 3; ++r) {
    session::Run run;
    run.id = r;
    run.mode = "step " + std::to_string(r);
    s.runs.push_back(run);
  }
  auto shared = events_with_shared_args();
  for (int i = 0; i < 210000; ++i) {
    session::TimelineEvent e;
    if (i % 50000 < shared.size()) e = shared[static_cast<size_t>(i % 50000)];  // shared args in both halves
    e.run = i >= 100000 && i < 104000 ? i % 4 - 1 : i / 1000 % 4 - 1;
    e.lane = "host:" + std::to_string(i % 3);
    e.name = "op " + std::to_string(i) + (i % 7 ? "" : " \"quoted\"\n\x01\xff\xc3\xa9");
    e.category = i % 2 ? "cpu_op" : "kernel";
    e.start_ns = 1000 + i;
    e.dur_ns = i % 7;
    e.correlation = i % 5 ? i : -1;
    e.compile_id = i % 11 ? "" : "[0/" + std::to_string(i % 3) + "]";
    if (e.args_json.empty() && i % 3) e.args_json = "{\"External id\":" + std::to_string(i) + "}";
    s.timeline.push_back(std::move(e));
  }
  session::save_session(path, s);
  auto back = session::load_session(path);
  ASSERT_EQ(back.timeline.size(), s.timeline.size());
  for (size_t i = 0; i < s.timeline.size(); ++i) {
    const auto &a = s.timeline[i], &b = back.timeline[i];
    ASSERT_TRUE(a.run == b.run && a.lane == b.lane && a.name == b.name && a.category == b.category &&
                a.start_ns == b.start_ns && a.dur_ns == b.dur_ns && a.correlation == b.correlation &&
                a.compile_id == b.compile_id && a.args_json == b.args_json)
        << "row " << i;
  }
  EXPECT_EQ(sql_int(path, "SELECT max(first_seq + count) FROM timeline_blocks"), 210000);
  const auto run1 = static_cast<int64_t>(
      std::count_if(s.timeline.begin(), s.timeline.end(), [](const session::TimelineEvent& e) { return e.run == 1; }));
  EXPECT_EQ(sql_int(path, "SELECT sum(count) FROM timeline_blocks WHERE run = 1"), run1);
  EXPECT_EQ(sql_int(path, "SELECT count(*) FROM args_parts"), 2);  // once for the whole timeline
  // The view: one row per event, the same values (the non-ASCII name bytes as written).
  EXPECT_EQ(sql_int(path, "SELECT count(*) FROM timeline"), 210000);
  EXPECT_EQ(sql_int(path, "SELECT count(*) FROM timeline WHERE run = 1"), run1);
  // The reader's run filter: the run's events, in order.
  std::vector<session::TimelineEvent> of_run;
  session::SessionFile file(path);
  file.each_event(1, false, [&](const session::TimelineEvent& e) { of_run.push_back(e); });
  ASSERT_EQ(static_cast<int64_t>(of_run.size()), run1);
  EXPECT_EQ(of_run.front().name, s.timeline[2000].name);  // runs of 1000: -1, 0, 1, ...
  EXPECT_EQ(file.earliest_start(1), 1000 + 2000);
  EXPECT_EQ(sql_text(path, "SELECT name FROM timeline WHERE seq = 7"), s.timeline[7].name);
  EXPECT_EQ(sql_text(path, "SELECT args_json FROM timeline WHERE seq = 50001"), s.timeline[50001].args_json);
  EXPECT_EQ(sql_int(path, "SELECT sum(correlation) FROM timeline WHERE seq BETWEEN 100000 AND 104999"),
            [&] {
              int64_t n = 0;
              for (size_t i = 100000; i < 105000; ++i) n += s.timeline[i].correlation;
              return n;
            }());
  size_t others = 0;
  std::string left;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    if (entry.path().filename().string().find(".tmp-") != std::string::npos) left += " " + entry.path().filename().string(), ++others;
  EXPECT_EQ(others, 0u) << "left:" << left;
}

// Events go in blocks of up to kBlockEvents: timelines of every length around a block's worth round
// trip with seqs 0..n-1, and a run appended later numbers its events after them.
TEST(Store, TimelinesOfEveryLengthAroundABlockRoundTrip) {
  const std::string dir = test::temp_dir();
  for (int n : {0, 1, 63, 64, 65, 200, 511, 512, 513, 1024, 1025}) {
    const std::string path = dir + "/rows_" + std::to_string(n) + ".kiln";
    session::Session s;
    session::Run run;
    run.id = 0;
    run.mode = "default";
    s.runs.push_back(run);
    for (int i = 0; i < n; ++i) {
      session::TimelineEvent e;
      e.run = 0;
      e.lane = "host:" + std::to_string(i % 2);
      e.name = "op " + std::to_string(i);
      e.category = "cpu_op";
      e.start_ns = 10 * i;
      e.dur_ns = i;
      e.correlation = i % 3 ? i : -1;
      if (i % 4) e.args_json = "{\"i\":" + std::to_string(i) + "}";
      s.timeline.push_back(std::move(e));
    }
    session::save_session(path, s);
    auto back = session::load_session(path);
    ASSERT_EQ(back.timeline.size(), s.timeline.size()) << n;
    for (size_t i = 0; i < s.timeline.size(); ++i)
      ASSERT_TRUE(back.timeline[i].name == s.timeline[i].name && back.timeline[i].args_json == s.timeline[i].args_json &&
                  back.timeline[i].correlation == s.timeline[i].correlation && back.timeline[i].run == 0)
          << n << " row " << i;
    if (n > 0) {
      EXPECT_EQ(sql_int(path, "SELECT min(seq) FROM timeline"), 0) << n;
      EXPECT_EQ(sql_int(path, "SELECT max(seq) FROM timeline"), n - 1) << n;
    }
  }
  // A writer's runs: each run's rows after the stored ones, in order.
  const std::string path = dir + "/appended.kiln";
  session::Session header;
  {
    session::SessionWriter w(path, header);
    for (int r = 0; r < 3; ++r) {
      session::Run run;
      run.mode = "m" + std::to_string(r);
      std::vector<session::TimelineEvent> rows(static_cast<size_t>(65 + r));
      for (size_t i = 0; i < rows.size(); ++i) rows[i].name = std::to_string(r) + "/" + std::to_string(i);
      w.append_run(run, rows);
    }
    w.close();
  }
  EXPECT_EQ(sql_int(path, "SELECT count(*) FROM timeline"), 65 + 66 + 67);
  EXPECT_EQ(sql_int(path, "SELECT max(seq) - min(seq) + 1 FROM timeline"), 65 + 66 + 67);
  auto back = session::load_session(path);
  ASSERT_EQ(back.timeline.size(), 198u);
  EXPECT_EQ(back.timeline[0].name, "0/0");
  EXPECT_EQ(back.timeline[65].name, "1/0");
  EXPECT_EQ(back.timeline[197].name, "2/66");
}

// Files written before the timeline was stored in blocks hold one row per event in timeline_rows
// (under a view of the same columns): they read back, and events appended to them go in that form.
TEST(Store, FilesWithTimelineRowsStillOpenAndTakeMoreRows) {
  std::string path = test::temp_dir() + "/rows_timeline.kiln";
  session::Session s;
  s.timeline = events_with_shared_args();
  session::save_session(path, s);
  const char* to_rows =
      "CREATE TABLE timeline_rows (seq INTEGER PRIMARY KEY, run INTEGER NOT NULL, lane TEXT, name TEXT, "
      "category TEXT, start_ns INTEGER, dur_ns INTEGER, compile_id TEXT, kernel TEXT, correlation INTEGER, "
      "args_json TEXT, args_part INTEGER, args_tail TEXT); "
      "INSERT INTO timeline_rows SELECT seq, run, lane, name, category, start_ns, dur_ns, compile_id, kernel, "
      "correlation, args_json, NULL, NULL FROM timeline; "
      "DROP VIEW timeline; DROP TABLE timeline_blocks; DELETE FROM args_parts; "
      "CREATE VIEW timeline AS SELECT seq, run, lane, name, category, start_ns, dur_ns, compile_id, kernel, "
      "correlation, CASE WHEN args_part IS NULL THEN args_json ELSE args_json || (SELECT text FROM args_parts "
      "WHERE id = args_part) || args_tail END AS args_json FROM timeline_rows; "
      "CREATE INDEX timeline_by_run ON timeline_rows (run)";
  sql_exec(path, to_rows);
  auto back = session::load_session(path);
  ASSERT_EQ(back.timeline.size(), s.timeline.size());
  for (size_t i = 0; i < s.timeline.size(); ++i) EXPECT_EQ(back.timeline[i].args_json, s.timeline[i].args_json) << i;
  {
    session::SqliteDb w(path, session::SqliteDb::Mode::ReadWrite);
    session::Transaction t(w);
    session::write_timeline(w, s.timeline, 3);
    t.commit();
  }
  EXPECT_EQ(sql_int(path, "SELECT count(*) FROM timeline_rows WHERE run = 3"), static_cast<int64_t>(s.timeline.size()));
  EXPECT_EQ(sql_int(path, "SELECT count(*) FROM args_parts"), 2);
  back = session::load_session(path);
  ASSERT_EQ(back.timeline.size(), 2 * s.timeline.size());
  for (size_t i = 0; i < s.timeline.size(); ++i) {
    EXPECT_EQ(back.timeline[s.timeline.size() + i].args_json, s.timeline[i].args_json) << i;
    EXPECT_EQ(back.timeline[s.timeline.size() + i].run, 3) << i;
  }
}

// A block whose text was damaged, or whose count disagrees with it, fails the read with one line
// naming the file and the block; nothing is read half.
TEST(Store, DamagedTimelineBlocksNameTheFileAndTheBlock) {
  const std::string path = test::temp_dir() + "/damaged_blocks.kiln";
  for (const char* damage : {"UPDATE timeline_blocks SET events = substr(events, 1, length(events) - 3)",
                             "UPDATE timeline_blocks SET events = replace(events, ',\"compile\",', ',7,')",
                             "UPDATE timeline_blocks SET count = count + 1",
                             "UPDATE timeline_blocks SET events = '[[\"a\",\"b\",\"c\",1,2,\"\",\"\",-1,\"h\",99,\"t\"]]', count = 1",
                             "UPDATE timeline_blocks SET events = '[[\"\\ud800\",\"b\",\"c\",1,2,\"\",\"\",-1,\"\"]]', count = 1",
                             "UPDATE timeline_blocks SET events = '[[\"a\",\"b\",\"c\",99999999999999999999,2,\"\",\"\",-1,\"\"]]'"}) {
    session::Session s;
    s.timeline = events_with_shared_args();
    session::save_session(path, s);
    sql_exec(path, damage);
    try {
      session::load_session(path);
      ADD_FAILURE() << "read a damaged block: " << damage;
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(path + ": corrupt session file (timeline block at seq 0"), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  }
}

// start_writeback sends what the file holds so far towards the disk (a flush on a thread of its own);
// the file reads back as written, the descriptor and the thread are gone with the connection, and a
// connection without a file (in memory) or already closed ignores it.
TEST(SqliteDb, StartWritebackLeavesTheFileAsWrittenAndNoDescriptorOrThreadBehind) {
  auto count = [](const char* folder) {
    size_t n = 0;
    for (const auto& entry : std::filesystem::directory_iterator(folder)) n += entry.exists() ? 1 : 0;
    return n;
  };
  auto open_fds = [&] { return count("/proc/self/fd"); };
  const std::string path = test::temp_dir() + "/writeback.db";
  const size_t before = open_fds(), threads_before = count("/proc/self/task");
  {
    session::SqliteDb db(path, session::SqliteDb::Mode::Create);
    db.start_writeback();  // nothing written yet
    db.exec("PRAGMA synchronous = OFF; CREATE TABLE t (i INTEGER, s TEXT)");
    {
      session::Transaction tx(db);
      auto insert = db.prepare("INSERT INTO t VALUES (?, ?)");
      for (int i = 0; i < 20000; ++i) {
        insert->bind(1, i).bind(2, std::string(200, static_cast<char>('a' + i % 26))).run();
        if (i % 5000 == 0) db.start_writeback();  // inside the transaction, pages partly written
      }
      tx.commit();
    }
    db.start_writeback();
    db.start_writeback();  // again: the same descriptor and thread
    EXPECT_EQ(count("/proc/self/task"), threads_before + 1);
    db.close();
    EXPECT_EQ(count("/proc/self/task"), threads_before);
    db.start_writeback();  // closed: nothing
  }
  EXPECT_EQ(open_fds(), before);
  EXPECT_EQ(sql_int(path, "SELECT count(*) FROM t"), 20000);
  EXPECT_EQ(sql_int(path, "SELECT sum(i) FROM t WHERE substr(s, 200, 1) = 'c'"), [] {
    int64_t sum = 0;
    for (int i = 2; i < 20000; i += 26) sum += i;
    return sum;
  }());
  session::SqliteDb memory(":memory:", session::SqliteDb::Mode::Create);
  memory.start_writeback();
  EXPECT_EQ(open_fds(), before);
}
