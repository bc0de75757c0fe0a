// The .kiln file's schema: the tables, and the `meta` table that names the schema version.
//
// create_schema(db, created_at)
//   pre:  db is a fresh, empty database opened for writing, in a temporary file that nobody reads
//         before finish_schema() ran (the caller removes it when any write fails).
//   post: bulk-write settings (journal in memory, no syncs; 64 KiB pages when the caller expects
//         64 MiB or more of rows); every table exists; meta holds schema_version = kSchemaVersion,
//         kiln_version and created_at.
// finish_schema(db)
//   pre:  create_schema ran and no transaction is open.
//   post: WAL journal mode (kept in the file) with synchronous = NORMAL for this connection.
// check_schema(db, path)
//   post: returns normally when db is a Kiln session of schema kOldestSchemaVersion to kSchemaVersion
//         (an older file lacks the tables added since; readers take those as empty).
//   error: kiln::Error naming `path`: "not a Kiln session (no meta table)" or
//          "written by schema N; this Kiln reads schema 1 to 2". SqliteError passes through.
#pragma once

#include <cstdint>
#include <string>

#include "engine/session/sqlite_db.h"

namespace kiln::session {

void create_schema(SqliteDb& db, const std::string& created_at);
void finish_schema(SqliteDb& db);
void check_schema(SqliteDb& db, const std::string& path);

std::string kiln_version();  // the Kiln version this build writes into meta ("0.1.0")

}  // namespace kiln::session
