// What each graph break costs, measured on a run's traced host timeline.
//
// measure_break_costs(breaks, timeline, run)
//   pre:  `timeline` holds the run's host spans as profile_model and explain record them: one
//         "iteration" span per traced call, "region" spans named "region N" inside it, "guard",
//         "kernel" and "extern" spans inside those, "interpreter" spans between them.
//   post: one BreakCost per deduplicated site (group_breaks' key: id, reason, file:line) that stands
//         in at least one gap, most costly first. A gap is the time from the end of one region span
//         (or the iteration's start) to the start of the next (or the iteration's end); the sites
//         that stand in it are the breaks that end the region before and resume into the one after
//         (else those that end the region before, else those that resume into the one after). A gap
//         several sites stand in is split between them evenly (shared_gaps counts it). guard_ms is
//         the guard spans inside the next region's span. Everything is per traced iteration; share is
//         total_ms over the mean iteration; total_ms = gap_ms + guard_ms (lost fusion across the
//         break is measured apart and added by commands/lost_fusion's apply_lost_fusion).
//         No iteration spans, or no breaks: empty.
// break_costs_of(s, run): the stored costs of `run`, most costly first.
// shown_break_cost_run(s): the run whose break costs reports and panels show: the kiln backend's
//         default mode when it has costs, else the first run that has any; -1 when none has.
// cost_of(costs, record): the cost of the site `record` belongs to, or nullptr.
// ranked_break_groups(s): group_breaks(s.breaks) sorted by the shown run's total_ms, most costly
//         first (costs whose gap was not measured, BreakCost::unmeasured, after the measured ones, by
//         compile_ms); groups without a cost keep their order after those with one.
#pragma once

#include <string>
#include <vector>

#include "engine/report/break_groups.h"
#include "engine/session/session.h"

namespace kiln::report {

std::vector<session::BreakCost> measure_break_costs(const std::vector<session::GraphBreakRecord>& breaks,
                                                    const std::vector<session::TimelineEvent>& timeline, int run);

std::vector<session::BreakCost> break_costs_of(const session::Session& s, int run);
int shown_break_cost_run(const session::Session& s);
const session::BreakCost* cost_of(const std::vector<session::BreakCost>& costs, const session::GraphBreakRecord& record);
std::vector<BreakGroup> ranked_break_groups(const session::Session& s);

// "0.412 ms (3.1% of the step)": one cost as the reports and panels print it (lost fusion included
// when measured); imported costs add
// ", device 0.2 ms" and "; compile 388.0 ms in 2 compile(s)", and an unmeasured gap reads
// "not measured (why)". Not escaped.
std::string break_cost_text(const session::BreakCost& c);
// A break's lost fusion: "0.004 ms (k0_mul [0/0] + k0_add [1/0] -> k0_add [0/0])", "none (no kernel
// fuses across the break)", "not measured (why)" or, for costs measured before it was, "not checked".
// Not escaped.
std::string lost_fusion_text(const session::BreakCost& c);

}  // namespace kiln::report
