// render_json(session): the whole session as JSON text, every field, keys in a fixed order.
//
// post: two sessions with equal fields give byte-identical text (maps are sorted by key; lists keep
//       their order; doubles are printed in the shortest form that reads back to the same value,
//       NaN and infinities as null). A timeline event's args_json is embedded as a JSON value when
//       it parses, else as a string. The text ends with a newline.
// This is the machine-readable report and the store's round-trip check.
#pragma once

#include <string>

#include "engine/session/session.h"

namespace kiln::report {

std::string render_json(const session::Session& s);

}  // namespace kiln::report
