// What each graph break of an imported torch.compile run costs, as far as the imported data tells.
//
// measure_imported_break_costs(s)
//   pre:  s is an imported session (a TORCH_TRACE log, joined with a profiler trace or not; join.h).
//   post: one BreakCost per deduplicated break site (id, reason, file:line: report::group_breaks'
//         key), most costly first. compile_ms / compiles: the compile ids of the resume function the
//         site made Dynamo compile (CompiledRegion::frame "torch_dynamo_resume_in_<fn>_at_<line>" at
//         the break's file and line), summed over every compile of it. Gap: per ProfilerStep span, from
//         the end of each "region" span (Torch-Compiled Region) whose compile id is one the site's
//         breaks ended (GraphBreakRecord::compile_id) to the start of the next region span on the same
//         host lane inside the step, or the step's end; gap_ms is that host time per step, device_ms
//         the device time of the kernels, copies and sets launched (by correlation) inside it, per step;
//         total_ms = gap_ms, share = gap_ms over the mean step, iterations = steps, gaps = gaps per step.
//         When the gap cannot be measured, unmeasured says why: no profiler trace joined, no
//         ProfilerStep markers, or no region span of the site's compile ids; gap_ms, device_ms,
//         total_ms and share then stay 0 and are not shown as times. run: the first Run's id (the first
//         step), -1 without runs. No breaks: empty.
#pragma once

#include <vector>

#include "engine/session/session.h"

namespace kiln::importers {

std::vector<session::BreakCost> measure_imported_break_costs(const session::Session& s);

}  // namespace kiln::importers
