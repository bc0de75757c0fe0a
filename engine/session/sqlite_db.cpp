// The sqlite3 C API behind plain values; see sqlite_db.h.
#include "engine/session/sqlite_db.h"

#include <sqlite3.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <limits>
#include <mutex>
#include <thread>

#include "engine/session/sqlite_write_vfs.h"

namespace kiln::session {

namespace {

[[noreturn]] void fail(sqlite3* db, int rc, const std::string& what) {
  std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  throw SqliteError(rc & 0xff, what + ": " + msg);
}

}  // namespace

bool SqliteError::is_corrupt() const { return code_ == SQLITE_CORRUPT; }
bool SqliteError::is_not_a_db() const { return code_ == SQLITE_NOTADB; }
bool SqliteError::is_cant_open() const { return code_ == SQLITE_CANTOPEN || code_ == SQLITE_READONLY; }

SqliteStatement::SqliteStatement(sqlite3* db, const std::string& sql) : db_(db) {
  int rc = sqlite3_prepare_v2(db_, sql.c_str(), static_cast<int>(sql.size()), &stmt_, nullptr);
  if (rc != SQLITE_OK) fail(db_, rc, "prepare");
}

SqliteStatement::~SqliteStatement() { sqlite3_finalize(stmt_); }

SqliteStatement& SqliteStatement::bind(int index, const std::string& value) {
  int rc = sqlite3_bind_text64(stmt_, index, value.data(), value.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  if (rc != SQLITE_OK) fail(db_, rc, "bind");
  return *this;
}

SqliteStatement& SqliteStatement::bind_view(int index, std::string_view value) {
  // An empty view may have no data pointer; SQLite would bind NULL for it, not ''.
  const char* data = value.data() ? value.data() : "";
  int rc = sqlite3_bind_text64(stmt_, index, data, value.size(), SQLITE_STATIC, SQLITE_UTF8);
  if (rc != SQLITE_OK) fail(db_, rc, "bind");
  return *this;
}

SqliteStatement& SqliteStatement::bind(int index, int64_t value) {
  int rc = sqlite3_bind_int64(stmt_, index, value);
  if (rc != SQLITE_OK) fail(db_, rc, "bind");
  return *this;
}

SqliteStatement& SqliteStatement::bind_null(int index) {
  int rc = sqlite3_bind_null(stmt_, index);
  if (rc != SQLITE_OK) fail(db_, rc, "bind");
  return *this;
}

SqliteStatement& SqliteStatement::bind(int index, double value) {
  int rc = sqlite3_bind_double(stmt_, index, value);
  if (rc != SQLITE_OK) fail(db_, rc, "bind");
  return *this;
}

bool SqliteStatement::step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  // sqlite3_step's own code may be generic; the connection holds the extended one.
  int code = sqlite3_errcode(db_);
  std::string msg = sqlite3_errmsg(db_);
  sqlite3_reset(stmt_);
  throw SqliteError(code & 0xff, msg);
}

void SqliteStatement::run() {
  step();
  reset();
}

void SqliteStatement::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

int SqliteStatement::column_count() const { return sqlite3_column_count(stmt_); }

bool SqliteStatement::column_is_null(int index) const { return sqlite3_column_type(stmt_, index) == SQLITE_NULL; }

std::string SqliteStatement::column_text(int index) const {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, index));
  int n = sqlite3_column_bytes(stmt_, index);
  return p ? std::string(p, static_cast<size_t>(n)) : std::string();
}

std::string_view SqliteStatement::column_view(int index) const {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, index));
  int n = sqlite3_column_bytes(stmt_, index);
  return p ? std::string_view(p, static_cast<size_t>(n)) : std::string_view();
}

int64_t SqliteStatement::column_int(int index) const { return sqlite3_column_int64(stmt_, index); }

double SqliteStatement::column_double(int index) const {
  if (column_is_null(index)) return std::numeric_limits<double>::quiet_NaN();
  return sqlite3_column_double(stmt_, index);
}

// A file: URI for `path` with ?immutable=1 (percent-escaping what URIs reserve).
static std::string immutable_uri(const std::string& path) {
  std::string uri = "file:";
  const char* hex = "0123456789ABCDEF";
  for (unsigned char c : path) {
    if (c == '%' || c == '?' || c == '#' || c < 0x20) {
      uri += '%';
      uri += hex[c >> 4];
      uri += hex[c & 15];
    } else {
      uri += static_cast<char>(c);
    }
  }
  return uri + "?immutable=1";
}

SqliteDb::SqliteDb(const std::string& path, Mode mode) : path_(path) {
  // SQLite's memory statistics (unread by Kiln) put one process-wide mutex around every allocation:
  // two connections writing at once (two threads each saving a session) would queue on it. Only possible
  // before SQLite initializes, which the first open does.
  static const bool configured = sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0) == SQLITE_OK;
  (void)configured;
  int flags = SQLITE_OPEN_NOMUTEX;
  std::string name = path;
  if (mode == Mode::ReadOnly) flags |= SQLITE_OPEN_READONLY;
  if (mode == Mode::Immutable) {
    flags |= SQLITE_OPEN_READONLY | SQLITE_OPEN_URI;
    name = immutable_uri(path);
  }
  if (mode == Mode::ReadWrite) flags |= SQLITE_OPEN_READWRITE;
  if (mode == Mode::Create) flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
  // A new file is written through the gathering VFS (its pages reach the system in large writes).
  const char* vfs = mode == Mode::Create ? gathering_vfs_name() : nullptr;
  int rc = sqlite3_open_v2(name.c_str(), &db_, flags, vfs);
  if (rc != SQLITE_OK) {
    std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close(db_);
    db_ = nullptr;
    throw SqliteError(rc & 0xff, msg);
  }
  sqlite3_extended_result_codes(db_, 0);
  sqlite3_busy_timeout(db_, 5000);
}

// The background flush of start_writeback: one thread, one read-only descriptor of the file (the
// pages are the file's whichever descriptor asks).
class SqliteDb::Writeback {
 public:
  explicit Writeback(int fd) : fd_(fd) {
    try {
      thread_ = std::thread([this] { run(); });
    } catch (...) {  // no thread to be had: the requests to start writing alone
    }
  }
  ~Writeback() { (void)finish(); }

  void start() {
#if defined(__linux__) && defined(SYNC_FILE_RANGE_WRITE)
    ::sync_file_range(fd_, 0, 0, SYNC_FILE_RANGE_WRITE);
#endif
    if (!thread_.joinable()) return;
    {
      std::lock_guard<std::mutex> lock(m_);
      ++wanted_;
    }
    changed_.notify_one();
  }

  // Waits for the thread (its flush in progress, none asked after); "" or what failed.
  std::string finish() {
    if (thread_.joinable()) {
      {
        std::lock_guard<std::mutex> lock(m_);
        stop_ = true;
      }
      changed_.notify_one();
      thread_.join();
    }
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    return error_ ? std::string("flushing to disk failed (") + std::strerror(error_) + ")" : std::string();
  }

 private:
  void run() {
    std::unique_lock<std::mutex> lock(m_);
    for (;;) {
      changed_.wait(lock, [this] { return stop_ || wanted_ > done_; });
      if (stop_) return;
      const uint64_t asked = wanted_;
      lock.unlock();
      const int rc = ::fdatasync(fd_);
      const int err = rc == 0 ? 0 : errno;
      lock.lock();
      if (err && !error_) error_ = err;
      done_ = asked;
    }
  }

  int fd_;
  std::thread thread_;
  std::mutex m_;
  std::condition_variable changed_;
  uint64_t wanted_ = 0, done_ = 0;
  bool stop_ = false;
  int error_ = 0;  // the first failed flush's errno (read after the join)
};

SqliteDb::~SqliteDb() {
  writeback_.reset();
  if (db_) sqlite3_close_v2(db_);
}

void SqliteDb::start_writeback() {
  if (!db_) return;
  if (!writeback_) {
    const char* file = sqlite3_db_filename(db_, "main");
    if (!file || !*file) return;
    const int fd = ::open(file, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    writeback_ = std::make_unique<Writeback>(fd);
  }
  writeback_->start();
}

void SqliteDb::exec(const std::string& sql) {
  char* err = nullptr;
  int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errstr(rc);
    sqlite3_free(err);
    throw SqliteError(rc & 0xff, msg);
  }
}

std::unique_ptr<SqliteStatement> SqliteDb::prepare(const std::string& sql) {
  return std::make_unique<SqliteStatement>(db_, sql);
}

bool SqliteDb::has_table(const std::string& name) {
  auto st = prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?");
  st->bind(1, name);
  return st->step();
}

bool SqliteDb::has_column(const std::string& table, const std::string& column) {
  auto st = prepare("SELECT 1 FROM pragma_table_info(?) WHERE name = ?");
  st->bind(1, table).bind(2, column);
  return st->step();
}

int64_t SqliteDb::last_insert_rowid() const { return sqlite3_last_insert_rowid(db_); }

void SqliteDb::close() {
  if (writeback_) {
    const std::string failed = writeback_->finish();
    writeback_.reset();
    if (!failed.empty()) throw SqliteError(SQLITE_IOERR, failed);
  }
  if (!db_) return;
  // Pages the gathering VFS still holds are written here, where a failure is seen (one inside
  // sqlite3_close would be lost).
  int rc = flush_gathered_writes(db_);
  if (rc != SQLITE_OK) throw SqliteError(rc & 0xff, std::string("close: ") + sqlite3_errstr(rc));
  rc = sqlite3_close(db_);
  if (rc != SQLITE_OK) fail(db_, rc, "close");
  db_ = nullptr;
}

std::string SqliteDb::library_version() { return sqlite3_libversion(); }

Transaction::Transaction(SqliteDb& db) : db_(db) { db_.exec("BEGIN IMMEDIATE"); }

Transaction::~Transaction() {
  if (done_) return;
  try {
    db_.exec("ROLLBACK");
  } catch (const SqliteError&) {
    // The transaction may already be gone (SQLite rolls back on some errors by itself).
  }
}

void Transaction::commit() {
  db_.exec("COMMIT");
  done_ = true;
}

}  // namespace kiln::session
