// KinetoTrace: the profiler events of one import while they are being linked — the session's
// timeline plus, per event, the ids that link it (internal to engine/importers: kineto.cpp fills it,
// kineto_links.cpp links it and derives runs).
//
// link_kineto_trace(t, tally)
//   pre: t.session.timeline and t.ids are parallel, timestamps in epoch ns.
//   post: correlations completed from flows, GPU events annotated with their CPU op and launch,
//         Session::runs filled and every event's run set (see kineto.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/importers/common/import_notes.h"
#include "engine/session/session.h"

namespace kiln::importers {

struct EventIds {
  int64_t external_id = -1;
  bool device = false;   // runs on the GPU
  bool runtime = false;  // a cuda_runtime / cuda_driver call
  bool busy = false;     // kernel, memcpy or memset: counts toward GPU busy time
};

struct FlowPoint {  // one end of an "ac2g" flow
  int64_t id = 0;
  int64_t ts_ns = 0;
  std::string lane;
  bool start = false;
};

struct MemorySample {
  int64_t ts_ns = 0;
  int64_t allocated = 0;
};

struct KinetoTrace {
  session::Session session;
  std::vector<EventIds> ids;  // parallel to session.timeline
  std::vector<FlowPoint> flows;
  std::vector<MemorySample> memory;
};

void link_kineto_trace(KinetoTrace& t, ImportTally& tally);

// Adds "key": value_json to a JSON object text ("" counts as {}).
void add_json_field(std::string& object, std::string_view key, std::string_view value_json);

}  // namespace kiln::importers
