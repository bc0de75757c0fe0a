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
//
// write_chrome_trace(rows, run, out): the same text for run `run` (find_run(rows, mode),
//   gpu_kernel_stats.h) of a session read row by row (session_rows.h), written to `out` as it is
//   made: memory for one timeline event and the lanes, not for the run or the text. Errors of the
//   session file and of `out` pass through (kiln::Error).
#pragma once

#include <string>

#include "engine/base/output_file.h"
#include "engine/session/session.h"
#include "engine/session/session_rows.h"

namespace kiln::report {

std::string render_chrome_trace(const session::Session& s, const std::string& mode);
void write_chrome_trace(session::SessionRows& rows, int run, OutputSink& out);

}  // namespace kiln::report
