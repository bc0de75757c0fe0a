// The session model: everything one profiling run (or one import of a real torch.compile run)
// produced, as plain values. The SQLite store, the reports, the CLI and the GUI all read and
// write this one model. No LibTorch, no Qt.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/capture/capture_types.h"
#include "engine/records/records.h"

namespace kiln::session {

// What the compiler and the profiler produce, stored as they are (engine/records/records.h).
using records::AutotuneCandidate;
using records::FusionDecision;
using records::Kernel;
using records::TimelineEvent;

// 2: break_costs. Files of schema 1 still open (they hold no break costs). Files of schema 2 written
// before break_costs had device_ms, compile_ms, compiles and unmeasured still open (those read as 0/empty).
inline constexpr int kSchemaVersion = 2;
inline constexpr int kOldestSchemaVersion = 1;

struct Environment {
  std::string kiln_version;
  std::string libtorch_version;  // or the imported run's torch version
  std::string os;
  std::string cpu;
  std::string gpu;     // empty when none
  std::string driver;  // empty when none
  std::string cuda;    // empty when none
  std::string created_at;  // ISO 8601 UTC
  std::string float32_precision;  // "float32 matmul precision highest; cuDNN convolutions may use TF32"
};

struct ModelInfo {
  std::string path;
  std::string sha256;
  std::vector<std::string> inputs;  // "8x64", one per forward argument
  std::map<std::string, int> op_histogram;
  int64_t parameter_count = 0;
};

// A graph at one stage of the pipeline: Kiln's "captured", "lowered", "loops", "fused", or an
// imported run's "dynamo_output_graph", "aot_forward_graph", "inductor_post_grad_graph", ...
struct StageGraph {
  std::string stage;
  std::string text;  // readable listing
  std::string json;  // ir::to_json form when Kiln made it (empty for imported text graphs)
  std::string dot;   // DOT when available
};

// One compiled cache entry of one region (Kiln) or one compile id (imported), e.g. "[1/0]".
struct CompiledRegion {
  std::string compile_id;  // "[r/k]" or, imported, "[frame/compile]" with an optional "_attempt"
  int region = -1;
  std::string frame;        // imported: the function Dynamo compiled (name and file:line)
  std::vector<StageGraph> graphs;
  std::vector<std::string> guards;   // guard texts
  std::vector<std::string> symbols;  // "s0 = x.size(0)"
  std::string recompile_reason;
  double compile_ms = 0;
  int64_t hits = 0;
  std::map<std::string, std::string> metrics;  // imported compilation_metrics and the like
};

struct GraphBreakRecord {
  capture::GraphBreak info;
  int hits = 0;
  std::string compile_id;               // imported: the compile id whose restart it caused
  std::vector<std::string> user_stack;  // imported: "file:line in fn" frames, innermost last
};

struct LatencyStats {
  double median_ms = 0, p10_ms = 0, p90_ms = 0;
  int iterations = 0;
};

// One mode/backend measured (or skipped) in a comparison run.
struct Run {
  int id = -1;                   // assigned by the store
  std::string mode;              // "eager", "default", "reduce-overhead", "max-autotune"
  std::string backend;           // "kiln", "eager", "aot_eager", "cudagraphs", "torchscript"
  std::string device;            // "cpu", "cuda:0"
  std::string status = "ok";     // "ok" or "skipped: <reason>" or "failed: <reason>"
  double compile_cold_ms = 0, compile_warm_ms = 0, first_call_ms = 0;
  LatencyStats latency;
  double kernels_per_iter = 0;
  double gpu_busy = 0;           // fraction 0..1 (0 on CPU)
  double launch_gap_ms = 0;      // mean gap between device kernels
  double host_overhead_ms = 0;   // guard checks + interpreter per iteration
  int64_t peak_memory_bytes = 0;
  double speedup_vs_eager = 0;
  double max_abs_error = 0;
  double max_rel_error = 0;
};

// What one deduplicated graph-break site cost per iteration in one run, measured on the run's traced
// host timeline (report/break_costs.h). The site is the key report::group_breaks uses: break id,
// reason, file:line.
struct BreakCost {
  int run = -1;                // Run::id of the run measured
  std::string break_id;        // "KB001"
  std::string reason;
  std::string file;
  int line = 0;
  int iterations = 0;          // traced iterations measured
  int gaps = 0;                // gaps between regions per iteration that this site stands in
  int shared_gaps = 0;         // of those, gaps that other sites stand in too (the time is split)
  double gap_ms = 0;           // per iteration: from the end of the region before to the start of the next
  double interpreter_ms = 0;   // per iteration: the part of the gap in Kiln's interpreter (eager code)
  double guard_ms = 0;         // per iteration: guard checks of the region it resumes into
  double total_ms = 0;         // gap_ms + guard_ms + lost_fusion_ms (when measured)
  double step_ms = 0;          // mean traced iteration
  double share = 0;            // total_ms / step_ms
  // Sessions written before lost fusion was measured: the last generated kernel before the gap and
  // the first after it when both were pointwise (a guess, never checked). Read and kept, no longer
  // made or shown.
  std::string fusion_pair;     // "k2_relu + k0_mul" (empty: none)
  double fusion_pair_ms = 0;
  // Lost fusion (commands/lost_fusion.h): the kernels Kiln's scheduler fuses across the break when
  // the two regions are joined, and the time that saves per iteration, measured (part of total_ms).
  // lost_fusion_checked: the join was tried; lost_fusion_unmeasured: why it could not be measured.
  bool lost_fusion_checked = false;
  std::string lost_fusion;     // "k0_mul [0/0] + k0_add [1/0] -> k0_add [0/0]" (empty: none fuses across)
  double lost_fusion_ms = 0;
  std::string lost_fusion_unmeasured;
  // Imported torch.compile runs (importers/imported_break_costs.h): the device time of the kernels
  // launched in the gaps, per profiler step; the compile time of the resume functions the site made
  // Dynamo compile (compiles: how many compile ids); and, when the gap could not be measured, why
  // (then gap_ms, total_ms and share are not measurements and are left 0).
  double device_ms = 0;
  double compile_ms = 0;
  int compiles = 0;
  std::string unmeasured;
};

// One deduplicated break site: the same break id, reason and source line (what the cost tables
// count once), and a cost record for it with the site's fields filled.
inline std::string break_site_key(const GraphBreakRecord& r) {
  return r.info.id + "\n" + r.info.reason + "\n" + r.info.loc.file + ":" + std::to_string(r.info.loc.line);
}
inline BreakCost break_cost_site(const GraphBreakRecord& r, int run) {
  BreakCost c;
  c.run = run;
  c.break_id = r.info.id;
  c.reason = r.info.reason;
  c.file = r.info.loc.file;
  c.line = r.info.loc.line;
  return c;
}

// What recompiles cost over explain's calls (commands/explain_costs.h), as `kiln explain --cost -o`
// stores it: per region and cache entry the compile time and hits, the time lost to guard checks that
// failed and to running eagerly after the recompile limit, the dimensions that kept changing with the
// advice, and the measured effect of following it (the calls again with dynamic=true).
struct RecompileEntryCost {
  std::string compile_id;  // "[r/k]"
  double compile_ms = 0;   // capture, the backend's compile and the entry's first run, measured
  int64_t hits = 0;
  std::string recompile_reason;
};

struct RegionRecompileCost {
  int region = -1;
  std::vector<RecompileEntryCost> entries;
  double compile_ms = 0;           // all entries
  double failed_guard_ms = 0;      // guard checks that failed (each one led to another check or a recompile)
  int failed_guard_checks = 0;
  double eager_fallback_ms = 0;    // region calls run eagerly after the recompile limit
  int eager_fallback_calls = 0;
  bool limit_reached = false;
};

// One configuration's pass through the calls.
struct RecompilePass {
  std::string dynamic;     // "auto", "true", "false"
  int compiles = 0;        // cache entries made
  double compile_ms = 0;   // all regions
  double cold_ms = 0;      // the first pass through the calls, compiles included
  double warm_call_ms = 0; // mean call after it
  double failed_guard_ms = 0;
  double eager_fallback_ms = 0;
};

struct DynamicEffect {
  std::string advice;      // the advice followed (report::churn_advice of the dimension that changed most)
  RecompilePass before, after;
  bool outputs_equal = false;  // dynamic=true's outputs equal the first configuration's
  double max_abs_diff = 0;
};

struct RecompileCosts {
  int rounds = 0;          // warm passes measured; 0: not measured (sessions without recompile costs)
  int calls = 0;           // calls per pass
  std::vector<RegionRecompileCost> regions;
  RecompilePass pass;      // the configuration as asked
  std::vector<std::string> advice;  // one per dimension that kept changing
  bool has_effect = false;
  DynamicEffect effect;    // when has_effect
  bool measured() const { return rounds > 0; }
};

// What an import could not take: counted, never fatal.
struct ImportNote {
  std::string source;  // file name
  std::string what;    // "bad payload MD5", "unknown event type 'foo'", "corrupt JSON at line 12"
  int64_t count = 0;
  std::string example;
};

struct Session {
  int schema_version = kSchemaVersion;
  std::string origin;  // "kiln profile", "kiln explain", "TORCH_TRACE import", "profiler trace import"
  Environment env;
  ModelInfo model;
  std::vector<GraphBreakRecord> breaks;
  std::vector<CompiledRegion> regions;
  std::vector<capture::Event> events;
  std::vector<Kernel> kernels;
  std::vector<FusionDecision> fusion;
  std::vector<Run> runs;
  std::vector<TimelineEvent> timeline;
  std::vector<BreakCost> break_costs;  // per run, most costly first
  RecompileCosts recompile_costs;      // kiln explain --cost -o; empty otherwise
  std::vector<ImportNote> import_notes;
  int rank = -1;  // imported distributed runs: the rank this session holds
};

}  // namespace kiln::session
