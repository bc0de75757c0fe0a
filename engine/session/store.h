// The session store: one SQLite file (.kiln) per session, versioned schema, WAL, batched inserts.
//
// save_session(path, s)
//   post: path holds exactly s (written to a temporary file in the same folder, then renamed:
//         a crash never leaves a half-written file in place of an older one).
// load_session(path)
//   error: kiln::Error naming the file: missing, not a Kiln session, corrupt, or written with
//          another schema version ("written by schema 3; this Kiln reads schema 1 to 2").
// SessionWriter: for long runs. open() writes the header (everything but runs and their
//   timeline and break costs); each append_run() commits one run and its timeline events in one transaction,
//   so a kill at any moment leaves every finished run readable.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/session/session.h"

namespace kiln::session {

void save_session(const std::string& path, const Session& s);
Session load_session(const std::string& path);

class SessionWriter {
 public:
  SessionWriter(const std::string& path, const Session& header);  // creates or truncates the file
  ~SessionWriter();
  SessionWriter(const SessionWriter&) = delete;
  SessionWriter& operator=(const SessionWriter&) = delete;
  int append_run(const Run& run, const std::vector<TimelineEvent>& timeline);  // returns the run id
  void append_kernels(const std::vector<Kernel>& kernels);
  // Stores what a stored run's graph breaks cost (BreakCost::run names it).
  void append_break_costs(const std::vector<BreakCost>& costs);
  // Stores the autotune table of an already stored kernel (max-autotune tunes on its first call,
  // after the header was written). Returns false when the session holds no such kernel.
  bool record_autotune(const std::string& kernel, const std::string& compile_id,
                       const std::vector<AutotuneCandidate>& candidates);
  void close();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln::session
