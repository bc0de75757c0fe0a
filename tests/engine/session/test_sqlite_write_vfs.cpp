// The gathering VFS that new session files are written through: what it writes reads back as
// written (pages re-read and rewritten while held included), its pages reach the system in few
// large writes, and a write that fails after the last statement is reported by close().
#include "engine/session/sqlite_write_vfs.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/resource.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "engine/session/sqlite_db.h"
#include "tests/support/paths.h"

using namespace kiln;

namespace {

void exec(sqlite3* db, const std::string& sql) {
  char* err = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  const std::string what = err ? err : "";
  sqlite3_free(err);
  ASSERT_EQ(rc, SQLITE_OK) << sql << ": " << what;
}

std::string query_text(sqlite3* db, const std::string& sql) {
  sqlite3_stmt* st = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  std::string out;
  if (st && sqlite3_step(st) == SQLITE_ROW) {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
    out = p ? p : "";
  }
  sqlite3_finalize(st);
  return out;
}

// Row i's text: 1500-2700 bytes, different for every row.
std::string row_text(int i) {
  std::string s(1500 + static_cast<size_t>(i * 37 % 1200), 'a');
  for (size_t k = 0; k < s.size(); ++k) s[k] = static_cast<char>('a' + (i * 131 + k * 7) % 26);
  return s;
}

// What the table should hold after the writes below: count, total length, and a digest of the text.
std::string expected_contents(int rows) {
  int64_t length = 0, digest = 0;
  for (int i = 0; i < rows; ++i) {
    std::string s = i % 7 == 0 ? std::string(3000, 'z') : row_text(i);
    length += static_cast<int64_t>(s.size());
    digest += i * static_cast<int64_t>(static_cast<unsigned char>(s[s.size() / 2]));
  }
  return std::to_string(rows) + "|" + std::to_string(length) + "|" + std::to_string(digest);
}

const char* kContents = "SELECT count(*) || '|' || sum(length(s)) || '|' || sum(i * unicode(substr(s, length(s) / 2 + 1, 1))) FROM t";

// The process's write system calls so far (/proc/self/io's syscw).
int64_t write_calls() {
  std::ifstream io("/proc/self/io");
  std::string key;
  int64_t value = 0;
  while (io >> key >> value)
    if (key == "syscw:") return value;
  return -1;
}

}  // namespace

TEST(GatheringVfs, AFileWrittenThroughItReadsBackAsWritten) {
  const std::string path = test::temp_dir() + "/gathered.db";
  const char* vfs = session::gathering_vfs_name();
  ASSERT_NE(vfs, nullptr);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, vfs), SQLITE_OK);
  // A small page cache: pages are written, read back and changed again while the VFS may hold them.
  exec(db, "PRAGMA page_size = 4096; PRAGMA cache_size = 8; PRAGMA journal_mode = MEMORY; PRAGMA synchronous = OFF");
  exec(db, "BEGIN; CREATE TABLE t (i INTEGER PRIMARY KEY, s TEXT)");
  const int rows = 3000;
  sqlite3_stmt* insert = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "INSERT INTO t VALUES (?, ?)", -1, &insert, nullptr), SQLITE_OK);
  for (int i = 0; i < rows; ++i) {
    const std::string s = row_text(i);
    sqlite3_bind_int(insert, 1, i);
    sqlite3_bind_text(insert, 2, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
    ASSERT_EQ(sqlite3_step(insert), SQLITE_DONE) << sqlite3_errmsg(db);
    sqlite3_reset(insert);
  }
  sqlite3_finalize(insert);
  exec(db, "UPDATE t SET s = printf('%.*c', 3000, 'z') WHERE i % 7 = 0");  // pages rewritten, some held
  EXPECT_EQ(query_text(db, kContents), expected_contents(rows)) << "read back inside the transaction";
  exec(db, "COMMIT; PRAGMA journal_mode = WAL; PRAGMA wal_checkpoint(TRUNCATE)");
  EXPECT_EQ(session::flush_gathered_writes(db), SQLITE_OK);
  ASSERT_EQ(sqlite3_close(db), SQLITE_OK);

  // Read with SQLite's own VFS.
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  EXPECT_EQ(query_text(db, "PRAGMA integrity_check"), "ok");
  EXPECT_EQ(query_text(db, kContents), expected_contents(rows));
  sqlite3_close(db);
}

TEST(GatheringVfs, PagesReachTheSystemInFewWrites) {
  const std::string path = test::temp_dir() + "/few_writes.db";
  const int64_t before = write_calls();
  if (before < 0) GTEST_SKIP() << "no /proc/self/io here";
  {
    session::SqliteDb db(path, session::SqliteDb::Mode::Create);
    db.exec("PRAGMA page_size = 4096; PRAGMA journal_mode = MEMORY; PRAGMA synchronous = OFF");
    db.exec("CREATE TABLE t (i INTEGER, s TEXT)");
    session::Transaction tx(db);
    auto insert = db.prepare("INSERT INTO t VALUES (?, ?)");
    for (int i = 0; i < 4000; ++i) insert->bind(1, i).bind(2, row_text(i)).run();  // about 8 MB
    insert.reset();
    tx.commit();
    db.close();
  }
  const int64_t calls = write_calls() - before;
  const auto bytes = static_cast<int64_t>(std::filesystem::file_size(path));
  ASSERT_GT(bytes, 7 << 20);
  // One write per 4 KiB page would be bytes / 4096 (about 2000); gathered, about bytes / 64 KiB.
  EXPECT_LT(calls, bytes / 4096 / 8) << calls << " write calls for " << bytes << " bytes";
}

// A write held until close that then fails (here: past the file size limit, as a full disk would)
// is close()'s error, not lost inside sqlite3_close.
TEST(GatheringVfs, AWriteThatFailsAtCloseIsCloseError) {
  const std::string path = test::temp_dir() + "/limited.db";
  const int status = test::in_child([&] {
    ::signal(SIGXFSZ, SIG_IGN);
    struct rlimit limit {};
    limit.rlim_cur = limit.rlim_max = 16 << 10;
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) return 10;
    session::SqliteDb db(path, session::SqliteDb::Mode::Create);
    // Everything fits the page cache and stays under one gathered write (64 KiB): nothing reaches
    // the file before close.
    db.exec("PRAGMA page_size = 4096; PRAGMA cache_size = -4000; PRAGMA journal_mode = MEMORY; PRAGMA synchronous = OFF");
    try {
      db.exec("CREATE TABLE t (i INTEGER, s TEXT)");
      session::Transaction tx(db);
      auto insert = db.prepare("INSERT INTO t VALUES (?, ?)");
      for (int i = 0; i < 16; ++i) insert->bind(1, i).bind(2, row_text(i)).run();  // about 36 KB
      insert.reset();
      tx.commit();
    } catch (const session::SqliteError&) {
      return 3;  // failed before close: not the case this test is about
    }
    try {
      db.close();
    } catch (const session::SqliteError&) {
      return 0;
    }
    return 1;  // the failed write went unreported
  });
  EXPECT_EQ(status, 0) << (status == 1 ? "close() reported no error" : status == 3 ? "a statement failed first" : "");
}
