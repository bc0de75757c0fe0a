// SqliteDb and SqliteStatement: the one adapter over the sqlite3 C API. Everything else in Kiln
// talks to SQLite through these two classes and sees only plain values (strings, int64, double).
//
// SqliteDb(path, mode)
//   pre:  for Mode::ReadOnly the file exists; for Mode::Create its folder exists.
//   post: an open connection with foreign keys on and a busy timeout; closed by the destructor.
//         Mode::Create writes through the gathering VFS (sqlite_write_vfs.h): close() writes what
//         it holds and reports a failure; the destructor alone would lose that failure.
//   error: SqliteError carrying SQLite's result code and message (the caller names the file).
// SqliteStatement: a prepared statement; bind_* take 1-based indexes, column_* 0-based ones.
//   step() returns true while a row is available; reset() readies it for the next bind/step.
//   bind() copies text; bind_view() does not (the bytes must outlive the statement's next reset).
// Transaction: BEGIN IMMEDIATE at construction, ROLLBACK at destruction unless commit() ran.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "engine/base/error.h"

struct sqlite3;
struct sqlite3_stmt;

namespace kiln::session {

// An SQLite failure: `code` is SQLite's primary result code (SQLITE_CORRUPT = 11, SQLITE_NOTADB = 26, ...).
class SqliteError : public Error {
 public:
  SqliteError(int code, const std::string& message) : Error(message), code_(code) {}
  int code() const { return code_; }
  bool is_corrupt() const;     // the file is damaged (SQLITE_CORRUPT)
  bool is_not_a_db() const;    // the file is not an SQLite database (SQLITE_NOTADB)
  bool is_cant_open() const;   // the file or its folder cannot be opened (SQLITE_CANTOPEN, SQLITE_READONLY)

 private:
  int code_;
};

class SqliteStatement {
 public:
  SqliteStatement(sqlite3* db, const std::string& sql);
  ~SqliteStatement();
  SqliteStatement(const SqliteStatement&) = delete;
  SqliteStatement& operator=(const SqliteStatement&) = delete;

  SqliteStatement& bind(int index, const std::string& value);
  SqliteStatement& bind(int index, const char* value) { return bind(index, std::string(value)); }
  SqliteStatement& bind(int index, int64_t value);
  SqliteStatement& bind(int index, int value) { return bind(index, static_cast<int64_t>(value)); }
  SqliteStatement& bind(int index, double value);
  SqliteStatement& bind(int index, bool value) { return bind(index, static_cast<int64_t>(value ? 1 : 0)); }
  SqliteStatement& bind_null(int index);
  // Text that is not copied: the caller keeps its bytes unchanged until the statement is reset
  // (run() resets it). For the rows of bulk inserts.
  SqliteStatement& bind_view(int index, std::string_view value);

  bool step();   // true: a row is ready; false: done
  void run();    // step() once, for statements that return no rows, then reset()
  void reset();  // ready for new bindings

  int column_count() const;
  bool column_is_null(int index) const;
  std::string column_text(int index) const;  // "" for NULL
  std::string_view column_view(int index) const;  // as column_text, valid until the next step/reset
  int64_t column_int(int index) const;       // 0 for NULL
  double column_double(int index) const;     // NaN for NULL (SQLite stores NaN as NULL)

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

class SqliteDb {
 public:
  // Immutable: read-only, and SQLite assumes nobody changes the file (no -shm needed; for files in
  // folders this process cannot write).
  enum class Mode { ReadOnly, Immutable, ReadWrite, Create };
  SqliteDb(const std::string& path, Mode mode);
  ~SqliteDb();
  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;

  void exec(const std::string& sql);  // one or more statements, no results
  std::unique_ptr<SqliteStatement> prepare(const std::string& sql);
  bool has_table(const std::string& name);
  bool has_column(const std::string& table, const std::string& column);
  int64_t last_insert_rowid() const;
  void close();  // closes now (checkpoints the WAL); errors (a failed background flush too) are reported
  // Sends the file's pages written so far towards the disk without waiting: the system is asked to
  // start writing them (Linux's sync_file_range) and a thread of this connection flushes them
  // (fdatasync), so that a large file written with synchronous=OFF leaves little to its final fsync
  // (the flush of a disk's cache is most of that fsync's time). A call while a flush runs asks for
  // one more after it. A flush that fails makes close() fail (the final fsync, on another
  // descriptor, might not be told); without a thread to be had, only the request to start writing.
  void start_writeback();

  static std::string library_version();  // "3.40.1"

 private:
  sqlite3* db_ = nullptr;
  std::string path_;
  class Writeback;
  std::unique_ptr<Writeback> writeback_;  // made by the first start_writeback()
};

class Transaction {
 public:
  explicit Transaction(SqliteDb& db);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit();

 private:
  SqliteDb& db_;
  bool done_ = false;
};

}  // namespace kiln::session
