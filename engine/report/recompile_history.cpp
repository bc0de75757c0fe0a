// Recompile entries from capture events or region records; see recompile_history.h.
#include "engine/report/recompile_history.h"

namespace kiln::report {

std::vector<RecompileEntry> recompile_history(const session::Session& s) {
  using Kind = capture::Event::Kind;
  std::vector<RecompileEntry> out;
  std::vector<const capture::Event*> failures;  // guard failures not yet attached to a recompile
  for (const auto& e : s.events) {
    if (e.kind == Kind::GuardFailure) {
      failures.push_back(&e);
      continue;
    }
    if (e.kind != Kind::Recompile && e.kind != Kind::RecompileLimit) continue;
    RecompileEntry r;
    r.compile_id = e.compile_id;
    r.call = e.call;
    r.region = e.region;
    r.limit = e.kind == Kind::RecompileLimit;
    r.reason = e.message;
    std::vector<const capture::Event*> rest;
    for (const auto* f : failures) {
      if (f->call == e.call && f->region == e.region) r.failed_guards.push_back(f->message);
      else rest.push_back(f);
    }
    failures = rest;
    out.push_back(std::move(r));
  }
  if (!out.empty()) return out;
  for (const auto& reg : s.regions) {
    if (reg.recompile_reason.empty()) continue;
    RecompileEntry r;
    r.compile_id = reg.compile_id;
    r.region = reg.region;
    r.reason = reg.recompile_reason;
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace kiln::report
