// import_torch_trace: one TORCH_TRACE log (TORCH_TRACE=dir python ...; one file per process and
// rank) → one Session, read as a stream: memory holds what the session stores plus one record.
//
// What goes where (compile ids are Dynamo's, bracketed: "[0/0]", "[!1/0/0]" for compiled autograd;
// a compile id Dynamo reuses after torch._dynamo.reset() gets "#2", "#3" appended):
//   dynamo_start            → a CompiledRegion; frame and metrics "start_stack"; a Capture event
//   dynamo_output_graph, aot_*_graph, inductor_*_graph, exported_program and every other record
//                           with a payload → StageGraph{stage = record type or artifact name}
//   dynamo_guards / dynamo_cpp_guards_str → CompiledRegion::guards (Python guards win)
//   compilation_metrics     → compile_ms, metrics, restart_reasons → GraphBreakRecords,
//                             fail_type/fail_reason → EagerFallback event, recompile_reason
//   artifact                → graph breaks with user stacks, recompile reasons, cache hit/miss
//                             (metrics + events), triton_kernel_info (metrics), else StageGraph
//   inductor_output_code    → Kernels: the module, then one per generated kernel
//   chromium_event          → TimelineEvents on the "compile" lane (epoch ns)
//   create_symbol           → CompiledRegion::symbols
//   anything else           → a Capture event "<type> <metadata JSON>" (+ StageGraph for a payload);
//                             types this importer does not know are also counted in import_notes.
// Never fatal past opening the file: corrupt JSON, unknown lines, MD5 mismatches, cut files are
// counted in Session::import_notes. Session::rank comes from the envelopes' "rank" or, failing
// that, from a "rank_N" in the file name.
//
// error: kiln::Error naming the file when it cannot be opened or is a directory.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "engine/session/session.h"

namespace kiln::importers {

struct TorchTraceOptions {
  bool verify_md5 = true;
  size_t max_line_bytes = size_t(1) << 30;     // longer lines are skipped and counted
  size_t max_payload_bytes = size_t(1) << 30;  // records with more payload keep their header only
};

struct TraceFacts {  // what the import saw besides the session
  int64_t pid = -1;   // the logging process (glog header), -1 when no record was read
  int64_t records = 0;
  uint64_t bytes = 0;  // bytes read from disk
};

session::Session import_torch_trace(const std::string& path, const TorchTraceOptions& options = {},
                                    TraceFacts* facts = nullptr);

// "…/dedicated_log_torch_trace_rank_3.log" → 3; -1 when the name carries no rank.
int rank_from_file_name(const std::string& path);

}  // namespace kiln::importers
