// The names of capture's categories and events (no LibTorch: sessions, importers and reports use them).
#include "engine/capture/capture_types.h"

namespace kiln::capture {

BreakCategoryInfo break_category_info(BreakCategory c) {
  switch (c) {
    case BreakCategory::SideEffect: return {"KB001", "side effect"};
    case BreakCategory::DataDependentBranch: return {"KB002", "data-dependent branch"};
    case BreakCategory::ScalarExtraction: return {"KB003", "scalar extraction from a tensor"};
    case BreakCategory::OpaqueCall: return {"KB004", "opaque call"};
    case BreakCategory::DataDependentLoop: return {"KB005", "data-dependent loop"};
    case BreakCategory::UnrollLimit: return {"KB006", "loop too large to unroll"};
  }
  return {"KB000", "unknown"};
}

const char* event_kind_name(Event::Kind k) {
  switch (k) {
    case Event::Kind::Capture: return "capture";
    case Event::Kind::GraphBreak: return "graph_break";
    case Event::Kind::GuardFailure: return "guard_failure";
    case Event::Kind::Recompile: return "recompile";
    case Event::Kind::RecompileLimit: return "recompile_limit";
    case Event::Kind::CacheHit: return "cache_hit";
    case Event::Kind::EagerFallback: return "eager_fallback";
    case Event::Kind::UnrollLimit: return "unroll_limit";
    case Event::Kind::CudaGraph: return "cuda_graph";
  }
  return "?";
}

}  // namespace kiln::capture
