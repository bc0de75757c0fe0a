// Reading a whole Session back from the tables of store_schema.h.
//
// read_session(db, path)
//   pre:  check_schema(db, path) passed.
//   post: every table's rows in their stored order, as one Session (schema_version = the file's).
//   error: kiln::Error naming `path` when a stored value cannot mean anything (an unknown break
//          category or event kind, JSON text that does not parse); SqliteError passes through.
#pragma once

#include <string>

#include "engine/session/session.h"
#include "engine/session/sqlite_db.h"

namespace kiln::session {

Session read_session(SqliteDb& db, const std::string& path);

}  // namespace kiln::session
