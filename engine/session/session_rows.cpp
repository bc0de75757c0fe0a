// SessionInMemory and SessionFile; see session_rows.h.
#include "engine/session/session_rows.h"

#include "engine/session/sqlite_db.h"
#include "engine/session/store_read.h"

namespace kiln::session {

namespace {

bool memory_category(const std::string& c) { return c == "memory" || c == "memory peak"; }

}  // namespace

void SessionInMemory::each_region(const std::function<void(const CompiledRegion&)>& fn) {
  for (const auto& r : s_.regions) fn(r);
}

void SessionInMemory::each_kernel(const std::function<void(const Kernel&)>& fn) {
  for (const auto& k : s_.kernels) fn(k);
}

void SessionInMemory::each_event(std::optional<int> run, bool memory_only,
                                 const std::function<void(const TimelineEvent&)>& fn) {
  for (const auto& e : s_.timeline)
    if ((!run || e.run == *run) && (!memory_only || memory_category(e.category))) fn(e);
}

bool SessionInMemory::has_events(int run) {
  for (const auto& e : s_.timeline)
    if (e.run == run) return true;
  return false;
}

int64_t SessionInMemory::earliest_start(int run) {
  int64_t origin = 0;
  bool first = true;
  for (const auto& e : s_.timeline)
    if (e.run == run && (first || e.start_ns < origin)) {
      origin = e.start_ns;
      first = false;
    }
  return origin;
}

SessionCodeInMemory::SessionCodeInMemory(SessionRows& rows) : rows_(rows) {
  // Every field but the three large tables (a SessionInMemory's summary holds its timeline too).
  const Session& from = rows.summary();
  s_.schema_version = from.schema_version;
  s_.origin = from.origin;
  s_.env = from.env;
  s_.model = from.model;
  s_.breaks = from.breaks;
  s_.events = from.events;
  s_.fusion = from.fusion;
  s_.runs = from.runs;
  s_.break_costs = from.break_costs;
  s_.recompile_costs = from.recompile_costs;
  s_.import_notes = from.import_notes;
  s_.rank = from.rank;
  rows.each_region([&](const CompiledRegion& r) { s_.regions.push_back(r); });
  rows.each_kernel([&](const Kernel& k) { s_.kernels.push_back(k); });
}

void SessionCodeInMemory::each_region(const std::function<void(const CompiledRegion&)>& fn) {
  for (const auto& r : s_.regions) fn(r);
}

void SessionCodeInMemory::each_kernel(const std::function<void(const Kernel&)>& fn) {
  for (const auto& k : s_.kernels) fn(k);
}

void SessionCodeInMemory::each_event(std::optional<int> run, bool memory_only,
                                     const std::function<void(const TimelineEvent&)>& fn) {
  rows_.each_event(run, memory_only, fn);
}

template <typename F>
auto SessionFile::guarded(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const SqliteError& e) {
    throw read_error(path_, e);
  }
}

SessionFile::SessionFile(const std::string& path) : path_(path), db_(open_session_file(path)) {
  guarded([&] {
    db_->exec("BEGIN");  // one snapshot for every read below
    summary_ = read_session_summary(*db_, path_);
  });
}

SessionFile::~SessionFile() {
  try {
    db_->exec("COMMIT");
  } catch (const std::exception&) {
    // A read transaction: nothing to keep.
  }
}

void SessionFile::each_region(const std::function<void(const CompiledRegion&)>& fn) {
  guarded([&] { read_regions(*db_, path_, [&](CompiledRegion&& r) { fn(r); }); });
}

void SessionFile::each_kernel(const std::function<void(const Kernel&)>& fn) {
  guarded([&] { read_kernels(*db_, path_, [&](Kernel&& k) { fn(k); }); });
}

void SessionFile::each_event(std::optional<int> run, bool memory_only,
                             const std::function<void(const TimelineEvent&)>& fn) {
  guarded([&] { read_timeline(*db_, path_, run, memory_only, [&](TimelineEvent&& e) { fn(e); }); });
}

bool SessionFile::has_events(int run) {
  return guarded([&] { return has_timeline_events(*db_, run); });
}

int64_t SessionFile::earliest_start(int run) {
  return guarded([&] { return session::earliest_start(*db_, path_, run); });
}

}  // namespace kiln::session
