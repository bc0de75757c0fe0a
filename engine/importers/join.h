// Joining compile artefacts (a TORCH_TRACE import) and runtime cost (a profiler import) of the same
// process into one session, keyed by compile id.
//
// merge_sessions(into, from)
//   post: `into` holds everything of both: regions, graphs, kernels, breaks, events, runs (from's
//         run ids shifted past into's), timeline, notes; origin names both; environment fields
//         empty in `into` are taken from `from`. No linking yet.
// join_runtime_to_compile(s)
//   post: every "region" timeline event (Torch-Compiled Region f/c) carries the compile id of the
//         compile that produced it: for an id compiled more than once ("[0/0]", "[0/0]#2", after
//         torch._dynamo.reset()) the last one started before the event; every host event inside a
//         region span, and every GPU event launched from one (by correlation), carries the region's
//         compile id; triton kernels carry TimelineEvent::kernel and, when a generated Kernel of that
//         name exists (same compile id, else the only one of that name), its compile id.
//         Profiler-only CompiledRegions and source-less Kernel records that duplicate compiled ones
//         are dropped (a remaining source-less one takes the compile id all its launches share);
//         each compiled region's hits = its runtime calls (metrics "runtime calls", "runtime total
//         ms", "runtime mean ms"). Idempotent; a session with only one side is
//         linked as far as it goes. A large timeline's passes run in one part per core (parts > 0:
//         that many, whatever the size: tests); the result is the same.
#pragma once

#include "engine/session/session.h"

namespace kiln::importers {

void merge_sessions(session::Session& into, session::Session&& from);
void join_runtime_to_compile(session::Session& s, unsigned parts = 0);

}  // namespace kiln::importers
