// render_json(session): the whole session as JSON text, every field, keys in a fixed order.
//
// post: two sessions with equal fields give byte-identical text (maps are sorted by key; lists keep
//       their order; doubles are printed in the shortest form that reads back to the same value,
//       NaN and infinities as null). A timeline event's args_json is embedded as a JSON value when
//       it parses, else as a string. The text ends with a newline.
// This is the machine-readable report and the store's round-trip check.
//
// write_json(rows, out): the same text for a session read row by row (session_rows.h), written to
//   `out` as it is made: memory for one row of the session's large tables, not for the session or
//   the text. Errors of the session file and of `out` pass through (kiln::Error).
#pragma once

#include <string>

#include "engine/base/output_file.h"
#include "engine/session/session.h"
#include "engine/session/session_rows.h"

namespace kiln::report {

std::string render_json(const session::Session& s);
void write_json(session::SessionRows& rows, OutputSink& out);

}  // namespace kiln::report
