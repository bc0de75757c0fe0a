// render_chrome_trace(session, mode): one run's timeline in the Chrome trace event format (JSON
// object form), which Perfetto (ui.perfetto.dev) and chrome://tracing open.
//
// pre:  `mode` names a run of the session: "MODE" (the first such run), "MODE/BACKEND" or a peer
//       backend ("cudagraphs"); in a session without runs (an imported log) it is ignored and
//       the import-wide events (compiles, profiler spans) are exported.
// post: {"displayTimeUnit": "ns", "traceEvents": [...], "otherData": {...}}: one complete event
//       (ph "X", ts/dur in microseconds, ts counted from the run's first event, whose clock value
//       is otherData.start_ns) per span of that run and one instant (ph "i") per
//       zero-length event; each lane is one thread (tid) of a process (pid) named after the lane's
//       prefix before '/' ("cuda:0" of "cuda:0/stream 7"), with process_name/thread_name metadata
//       (ph "M"). Event args carry category, compile id, kernel, correlation and args_json.
// error: kiln::Error "no run 'X' (this session has: eager, default, default/cudagraphs; ...)".
#pragma once

#include <string>

#include "engine/session/session.h"

namespace kiln::report {

std::string render_chrome_trace(const session::Session& s, const std::string& mode);

}  // namespace kiln::report
