// A session read for writing it out: the small tables at once, the tables that grow with a run
// (regions with their graphs, kernels with their sources, the timeline) one row at a time, so that
// a writer streaming a report needs memory for one row, not for the session.
//
// SessionRows::summary(): meta, environment, model, breaks, events, fusion, runs, break costs,
//   recompile costs and import notes. Its regions, kernels and timeline may be empty: read those
//   through each_region, each_kernel and each_event.
// each_event(run, memory_only, fn): the timeline in stored order; with `run`, that run's events
//   only; with memory_only, only memory events (report/memory_view.h filters them further).
// has_events(run): whether the timeline holds an event of that run.
// earliest_start(run): the smallest start_ns of that run's events (0 when none).
//
// SessionInMemory(s): over a Session already read (the GUI's, a test's).
// SessionCodeInMemory(rows): over `rows`, with the regions and kernels read into memory once (they
//   grow with the compiled code, not with the runs, and writers that look them up many times want
//   them at hand): summary() holds the summary, the regions and the kernels, never the timeline;
//   events are read from `rows` as they are asked for. `rows` must outlive it.
// SessionFile(path): over a .kiln file, read in one snapshot (a writer appending runs meanwhile is
//   not seen half-way) until destroyed.
//   error: kiln::Error naming the file, as load_session words them (store.h), from the constructor
//          and from every read.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "engine/session/session.h"

namespace kiln::session {

class SqliteDb;

class SessionRows {
 public:
  virtual ~SessionRows() = default;
  virtual const Session& summary() const = 0;
  virtual void each_region(const std::function<void(const CompiledRegion&)>& fn) = 0;
  virtual void each_kernel(const std::function<void(const Kernel&)>& fn) = 0;
  virtual void each_event(std::optional<int> run, bool memory_only,
                          const std::function<void(const TimelineEvent&)>& fn) = 0;
  virtual bool has_events(int run) = 0;
  virtual int64_t earliest_start(int run) = 0;
};

class SessionInMemory : public SessionRows {
 public:
  explicit SessionInMemory(const Session& s) : s_(s) {}
  const Session& summary() const override { return s_; }
  void each_region(const std::function<void(const CompiledRegion&)>& fn) override;
  void each_kernel(const std::function<void(const Kernel&)>& fn) override;
  void each_event(std::optional<int> run, bool memory_only,
                  const std::function<void(const TimelineEvent&)>& fn) override;
  bool has_events(int run) override;
  int64_t earliest_start(int run) override;

 private:
  const Session& s_;
};

class SessionCodeInMemory : public SessionRows {
 public:
  explicit SessionCodeInMemory(SessionRows& rows);
  const Session& summary() const override { return s_; }
  void each_region(const std::function<void(const CompiledRegion&)>& fn) override;
  void each_kernel(const std::function<void(const Kernel&)>& fn) override;
  void each_event(std::optional<int> run, bool memory_only,
                  const std::function<void(const TimelineEvent&)>& fn) override;
  bool has_events(int run) override { return rows_.has_events(run); }
  int64_t earliest_start(int run) override { return rows_.earliest_start(run); }

 private:
  SessionRows& rows_;
  Session s_;
};

class SessionFile : public SessionRows {
 public:
  explicit SessionFile(const std::string& path);
  ~SessionFile() override;
  SessionFile(const SessionFile&) = delete;
  SessionFile& operator=(const SessionFile&) = delete;
  const Session& summary() const override { return summary_; }
  void each_region(const std::function<void(const CompiledRegion&)>& fn) override;
  void each_kernel(const std::function<void(const Kernel&)>& fn) override;
  void each_event(std::optional<int> run, bool memory_only,
                  const std::function<void(const TimelineEvent&)>& fn) override;
  bool has_events(int run) override;
  int64_t earliest_start(int run) override;

 private:
  template <typename F>
  auto guarded(F&& f) -> decltype(f());
  std::string path_;
  std::unique_ptr<SqliteDb> db_;
  Session summary_;
};

}  // namespace kiln::session
