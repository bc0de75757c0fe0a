// save_session, load_session and SessionWriter over the schema (store_schema), the row writers
// (store_write) and the row reader (store_read); see store.h for the contracts.
//
// Errors name the file and say what is wrong in one line:
//   "<path>: file not found", "<path>: not a Kiln session (not an SQLite database)",
//   "<path>: not a Kiln session (no meta table)", "<path>: corrupt session file (...)",
//   "<path>: written by schema 3; this Kiln reads schema 1 to 2", "<path>: cannot write session (...)".
#include "engine/session/store.h"

#include <unistd.h>

#include <cerrno>

#include <cstring>
#include <ctime>
#include <filesystem>
#include <exception>
#include <fstream>
#include <functional>
#include <set>
#include <thread>

#include "engine/base/output_file.h"
#include "engine/session/sqlite_db.h"
#include "engine/session/store_read.h"
#include "engine/session/store_schema.h"
#include "engine/session/store_write.h"

namespace kiln::session {

namespace fs = std::filesystem;

namespace {

std::string now_utc() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// Removes `db` and the WAL files SQLite keeps beside it; missing files are fine.
void remove_db_files(const std::string& db) {
  std::error_code ec;
  fs::remove(db, ec);
  fs::remove(db + "-wal", ec);
  fs::remove(db + "-shm", ec);
}

// Makes a freshly written temporary session whole on disk: switched to WAL (store_schema.h), the WAL
// checkpointed into the main file (a checkpoint that fails inside sqlite3_close would go unnoticed),
// the connection closed, the file flushed. Any failure throws: the caller must not rename a file
// that is not complete.
void finish_temporary(SqliteDb& db, const std::string& tmp) {
  finish_schema(db);
  db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  db.close();
  std::error_code ec;
  if (fs::exists(tmp + "-wal", ec) && fs::file_size(tmp + "-wal", ec) > 0)
    throw Error(tmp + ": cannot write session (the write-ahead log could not be folded into the file)");
  fsync_path(tmp);
}

// Removes temporaries (<path>.tmp-<pid>...) that processes no longer running left beside `path`.
void remove_stale_session_temporaries(const std::string& path) {
  fs::path p(path);
  remove_stale_temporaries(p.has_parent_path() ? p.parent_path().string() : ".", p.filename().string());
}

// Renames a finished temporary session over `path`. A WAL left beside an older file at `path`
// would be replayed onto the new one: it is removed first.
void move_into_place(const std::string& tmp, const std::string& path) {
  std::error_code ec;
  fs::remove(path + "-wal", ec);
  fs::remove(path + "-shm", ec);
  fs::rename(tmp, path, ec);
  if (ec) {
    remove_db_files(tmp);
    throw Error(path + ": cannot write session (" + ec.message() + ")");
  }
}

void check_output_folder(const std::string& path) {
  fs::path parent = fs::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty() && !fs::is_directory(parent, ec))
    throw Error(path + ": cannot write session (folder " + parent.string() + " does not exist)");
  // A session replaces a regular file only: never a device (/dev/full), a FIFO or a folder.
  auto st = fs::status(path, ec);
  if (fs::exists(st) && !fs::is_regular_file(st))
    throw Error(path + ": cannot write session (not a regular file)");
}

// Run ids as the file will hold them: each run's own id, or the next free one for id < 0.
std::vector<int> assign_run_ids(const std::string& path, const std::vector<Run>& runs) {
  std::set<int> used;
  int next = 0;
  for (const auto& r : runs) {
    if (r.id < 0) continue;
    if (!used.insert(r.id).second) throw Error(path + ": cannot write session (run id " + std::to_string(r.id) + " appears twice)");
    next = std::max(next, r.id + 1);
  }
  std::vector<int> ids;
  for (const auto& r : runs) ids.push_back(r.id >= 0 ? r.id : next++);
  return ids;
}

std::string temporary_name(const std::string& path) { return path + ".tmp-" + std::to_string(::getpid()); }

// A new session file at `path`, filled by `fill` in one transaction: written to a temporary file
// that is renamed into place once committed, so a kill before then leaves no file (or the older
// one) at `path`, never a file without a header.
template <typename Fill>
void write_new_file(const std::string& path, Fill&& fill) {
  std::string tmp = temporary_name(path);
  remove_db_files(tmp);
  try {
    SqliteDb db(tmp, SqliteDb::Mode::Create);
    create_schema(db, now_utc());
    Transaction t(db);
    fill(db);
    t.commit();
    finish_temporary(db, tmp);
  } catch (const SqliteError& e) {
    remove_db_files(tmp);
    throw Error(path + ": cannot write session (" + std::string(e.what()) + ")");
  } catch (...) {
    remove_db_files(tmp);
    throw;
  }
  move_into_place(tmp, path);
}

}  // namespace

void save_session(const std::string& path, const Session& s) {
  check_output_folder(path);
  OutputLock lock(path, "cannot write session");
  remove_stale_session_temporaries(path);
  std::vector<int> ids = assign_run_ids(path, s.runs);
  write_new_file(path, [&](SqliteDb& db) {
    write_header(db, s);
    write_runs(db, s.runs, ids);
    write_timeline(db, s.timeline);
    write_break_costs(db, s.break_costs);
    write_recompile_costs(db, s.recompile_costs);
  });
}

Session load_session(const std::string& path) {
  auto db = open_session_file(path);
  try {
    db->exec("BEGIN");  // one snapshot: a writer appending runs meanwhile is not seen half-way
    Session s = read_session(*db, path);
    db->exec("COMMIT");
    return s;
  } catch (const SqliteError& e) {
    throw read_error(path, e);
  }
}

struct SessionWriter::Impl {
  std::string path;
  std::unique_ptr<OutputLock> lock;  // held while the session is written: one writer per file
  std::unique_ptr<SqliteDb> db;

  template <typename F>
  auto guarded(F&& f) -> decltype(f()) {
    if (!db) throw Error(path + ": session writer is closed");
    try {
      return f();
    } catch (const SqliteError& e) {
      throw Error(path + ": cannot write session (" + std::string(e.what()) + ")");
    }
  }
};

SessionWriter::SessionWriter(const std::string& path, const Session& header) : impl_(std::make_unique<Impl>()) {
  impl_->path = path;
  check_output_folder(path);
  impl_->lock = std::make_unique<OutputLock>(path, "cannot write session");
  remove_stale_session_temporaries(path);
  write_new_file(path, [&](SqliteDb& db) {
    write_header(db, header);
    std::vector<TimelineEvent> session_wide;
    for (const auto& e : header.timeline)
      if (e.run < 0) session_wide.push_back(e);
    write_timeline(db, session_wide);
  });
  try {
    impl_->db = std::make_unique<SqliteDb>(path, SqliteDb::Mode::ReadWrite);
    impl_->db->exec("PRAGMA synchronous = NORMAL");  // per connection (WAL is kept in the file)
  } catch (const SqliteError& e) {
    throw Error(path + ": cannot write session (" + std::string(e.what()) + ")");
  }
}

SessionWriter::~SessionWriter() {
  try {
    if (impl_ && impl_->db) impl_->db->close();
  } catch (const std::exception&) {
    // Everything committed is already in the file; a failed WAL checkpoint loses nothing.
  }
}

int SessionWriter::append_run(const Run& run, const std::vector<TimelineEvent>& timeline) {
  return impl_->guarded([&] {
    Transaction t(*impl_->db);
    int id = next_run_id(*impl_->db);
    write_run(*impl_->db, run, id);
    write_timeline(*impl_->db, timeline, id);
    t.commit();
    return id;
  });
}

void SessionWriter::append_kernels(const std::vector<Kernel>& kernels) {
  impl_->guarded([&] {
    Transaction t(*impl_->db);
    write_kernels(*impl_->db, kernels);
    t.commit();
  });
}

bool SessionWriter::record_autotune(const std::string& kernel, const std::string& compile_id,
                                    const std::vector<AutotuneCandidate>& candidates) {
  return impl_->guarded([&] {
    Transaction t(*impl_->db);
    bool found = write_autotune(*impl_->db, kernel, compile_id, candidates);
    t.commit();
    return found;
  });
}

void SessionWriter::append_break_costs(const std::vector<BreakCost>& costs) {
  impl_->guarded([&] {
    Transaction t(*impl_->db);
    write_break_costs(*impl_->db, costs);
    t.commit();
  });
}

void SessionWriter::close() {
  if (!impl_->db) return;
  impl_->guarded([&] {
    impl_->db->exec("PRAGMA wal_checkpoint(TRUNCATE)");
    impl_->db->close();
  });
  impl_->db.reset();
  impl_->lock.reset();
}

}  // namespace kiln::session
