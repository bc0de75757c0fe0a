// locate_break_source(session, record, session_path, extra_dirs): the user's Python lines around a
// graph break, for the breaks panel.
//
// The line is the break's source location, or (imports without one) the innermost frame of its
// user stack. The file is the recorded path when it exists, else the same file name next to the
// model, in the model folder's src/, next to the session file, or in one of `extra_dirs`.
// post: found → `excerpt` holds up to `context` lines either side and `line` is the break's line;
//       not found → `excerpt` holds the recorded line text alone (numbered with the break's line)
//       and `note` says which file could not be found. line == 0: the break has no location.
#pragma once

#include <string>
#include <vector>

#include "engine/api/session.h"
#include "viewers/common/source_file.h"

namespace kiln::viewers {

struct BreakSource {
  std::string recorded_file;  // as the session has it
  std::string found_file;     // on this machine ("" when not found)
  int line = 0;
  SourceExcerpt excerpt;
  std::string note;
};

BreakSource locate_break_source(const session::Session& s, const session::GraphBreakRecord& b,
                                const std::string& session_path, const std::vector<std::string>& extra_dirs = {},
                                int context = 8);

}  // namespace kiln::viewers
