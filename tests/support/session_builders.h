// Session values the tests build by hand, one call each.
//
// timeline_event(run, lane, category, name, start_ns, dur_ns, kernel, compile_id): an event of run
//   `run` (-1: compile or import-wide) on `lane`, [start_ns, start_ns + dur_ns); `kernel` names the
//   session kernel it belongs to and `compile_id` its region ("" for none).
// kernel_event(run, kernel, compile_id, start_ns, dur_ns, lane): the device record of one launch of
//   `kernel` (its name and its kernel both), on a CUDA stream unless `lane` says otherwise.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "engine/api/session.h"

namespace kiln::test {

inline session::TimelineEvent timeline_event(int run, std::string lane, std::string category, std::string name,
                                             int64_t start_ns, int64_t dur_ns, std::string kernel = "",
                                             std::string compile_id = "") {
  session::TimelineEvent e;
  e.run = run;
  e.lane = std::move(lane);
  e.category = std::move(category);
  e.name = std::move(name);
  e.start_ns = start_ns;
  e.dur_ns = dur_ns;
  e.kernel = std::move(kernel);
  e.compile_id = std::move(compile_id);
  return e;
}

inline session::TimelineEvent kernel_event(int run, const std::string& kernel, std::string compile_id,
                                           int64_t start_ns, int64_t dur_ns,
                                           std::string lane = "cuda:0/stream 7") {
  return timeline_event(run, std::move(lane), "kernel", kernel, start_ns, dur_ns, kernel, std::move(compile_id));
}

}  // namespace kiln::test
