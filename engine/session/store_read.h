// Reading a Session back from the tables of store_schema.h: whole, or the large tables row by row.
//
// open_session_file(path)
//   post: a read-only connection to a Kiln session whose schema this build reads.
//   error: kiln::Error naming `path`, as load_session (store.h) words them.
// read_error(path, e): a SQLite failure while reading `path`, as one line naming it.
// read_session(db, path)
//   pre:  check_schema(db, path) passed.
//   post: every table's rows in their stored order, as one Session (schema_version = the file's).
//   error: kiln::Error naming `path` when a stored value cannot mean anything (an unknown break
//          category or event kind, JSON text that does not parse); SqliteError passes through.
// read_session_summary(db, path): as read_session without the three tables that grow with a run
//   (regions with their graphs, kernels with their sources, the timeline): those lists are empty.
// read_regions / read_kernels / read_timeline(db, path, ..., fn): those tables one row at a time, in
//   stored order, as read_session reads them; nothing is kept. read_timeline takes one run's events
//   only when `run` is given, and only memory events ("memory", "memory peak") when memory_only.
// has_timeline_events(db, run): whether the timeline holds an event of that run.
// earliest_start(db, path, run): the smallest start_ns of that run's events (0 when none).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "engine/session/session.h"
#include "engine/session/sqlite_db.h"

namespace kiln::session {

std::unique_ptr<SqliteDb> open_session_file(const std::string& path);
Error read_error(const std::string& path, const SqliteError& e);

Session read_session(SqliteDb& db, const std::string& path);
Session read_session_summary(SqliteDb& db, const std::string& path);
void read_regions(SqliteDb& db, const std::string& path, const std::function<void(CompiledRegion&&)>& fn);
void read_kernels(SqliteDb& db, const std::string& path, const std::function<void(Kernel&&)>& fn);
void read_timeline(SqliteDb& db, const std::string& path, std::optional<int> run, bool memory_only,
                   const std::function<void(TimelineEvent&&)>& fn);
bool has_timeline_events(SqliteDb& db, int run);
int64_t earliest_start(SqliteDb& db, const std::string& path, int run);

}  // namespace kiln::session
