// `kiln diff A B`: two runs compared, each side a Kiln session (.kiln) or anything `kiln import`
// takes (a TORCH_TRACE log or directory, a profiler trace), through the import path `kiln import`
// uses.
//
// load_diff_side(path)
//   post: the session stored at path (an SQLite file, or a .kiln name), else the one session
//         import_files makes of it.
//   error: kiln::Error naming the path: missing, a corrupt or foreign session, a log or trace that
//          cannot be read, or one that holds several processes (ranks): name one rank's log.
// diff_inputs(a, b, options)
//   post: report::diff_sessions of both sides, labelled with the paths as given unless options
//         label them.
#pragma once

#include <string>

#include "engine/report/session_diff.h"
#include "engine/session/session.h"

namespace kiln::commands {

session::Session load_diff_side(const std::string& path);

report::SessionDiff diff_inputs(const std::string& a, const std::string& b, report::DiffOptions options = {});

}  // namespace kiln::commands
