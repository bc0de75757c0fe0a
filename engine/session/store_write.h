// Writing a Session's parts into the tables of store_schema.h. Each function runs inside the
// caller's transaction and opens none of its own.
//
// write_header(db, s)
//   pre:  the schema exists and holds no session yet.
//   post: meta (origin, rank), env, model, op histogram, breaks, regions with their graphs, events,
//         kernels with autotune candidates, fusion decisions and import notes hold s's values, in
//         s's order. Runs and the timeline are not written.
// write_runs(db, runs, ids)
//   pre:  ids.size() == runs.size().
//   post: one row in runs per run, in order, with id ids[i] (run.id is ignored); one statement for
//         all (an import's thousands of ProfilerSteps). error: SqliteError if an id exists.
// write_run(db, run, id): write_runs of the one run.
// write_timeline(db, events, run_override)
//   post: events appended in order; with run_override >= 0 every event's run is run_override
//         instead of its own. The range form numbers the events from first_seq (-1: after the
//         stored ones). Files of this schema store them in blocks (timeline_blocks.h; a large
//         timeline's blocks are encoded by two threads); files written before, one per row in their
//         own form. Either way the longest member value of args of 8 KiB or more is stored once per
//         call in args_parts when it has 4 KiB or more; the timeline view reads every event's args
//         back as written.
// write_kernels(db, kernels)
//   post: kernels (and their autotune candidates) appended after those already stored.
// write_autotune(db, kernel, compile_id, candidates)
//   post: the first stored kernel with that name and compile id holds exactly `candidates` as its
//         autotune table. Returns false (and writes nothing) when no such kernel is stored.
// write_break_costs(db, costs)
//   post: costs appended in order after those already stored.
// write_recompile_costs(db, costs)
//   post: nothing when costs are not measured; else the recompile_costs and recompile_summary tables
//         (made when the file lacks them) hold exactly `costs`.
// next_run_id(db): one more than the largest stored run id (0 when none).
#pragma once

#include <string>
#include <vector>

#include "engine/session/session.h"
#include "engine/session/sqlite_db.h"

namespace kiln::session {

void write_header(SqliteDb& db, const Session& s);
void write_runs(SqliteDb& db, const std::vector<Run>& runs, const std::vector<int>& ids);
void write_run(SqliteDb& db, const Run& run, int id);
void write_timeline(SqliteDb& db, const std::vector<TimelineEvent>& events, int run_override = -1);
void write_timeline(SqliteDb& db, const TimelineEvent* first, const TimelineEvent* last, int run_override,
                    int64_t first_seq);
void write_kernels(SqliteDb& db, const std::vector<Kernel>& kernels);
bool write_autotune(SqliteDb& db, const std::string& kernel, const std::string& compile_id,
                    const std::vector<AutotuneCandidate>& candidates);
void write_break_costs(SqliteDb& db, const std::vector<BreakCost>& costs);
void write_recompile_costs(SqliteDb& db, const RecompileCosts& costs);
int next_run_id(SqliteDb& db);

}  // namespace kiln::session
