// CompileTimeline: the chromium_event records of a TORCH_TRACE log (Dynamo's own compile trace,
// "ph" B/E/X/i with "ts" in microseconds since the epoch) as spans on the "compile" lane.
//
// add(event, compile_id)
//   post: B opens a span, the matching E (same name, innermost open one on its pid/tid) closes it
//         and its args replace the B args when richer; X and i/I become spans/instants at once.
//         compile_id is the session's id for the event ("[0/0]"); "" for none.
//         An E without a B is counted in the tally ("unmatched chromium_event end").
// finish(out)
//   post: appends every span in start order; spans never closed keep duration 0 and are counted
//         ("unfinished compile span").
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "engine/importers/common/import_notes.h"
#include "engine/importers/common/json_doc.h"
#include "engine/session/session.h"

namespace kiln::importers {

class CompileTimeline {
 public:
  explicit CompileTimeline(ImportTally& tally) : tally_(tally) {}
  void add(const JsonValue& event, const std::string& compile_id);
  void finish(std::vector<session::TimelineEvent>& out);

 private:
  const std::string& args_of(const JsonValue& event);
  ImportTally& tally_;
  std::string scratch_;
  std::vector<session::TimelineEvent> spans_;
  std::vector<bool> open_;
  std::map<std::pair<int64_t, int64_t>, std::vector<size_t>> stacks_;  // (pid, tid) → open span indices
};

}  // namespace kiln::importers
