// import_files: what `kiln import PATH...` (and the GUI's Import) does with a list of paths —
// expand directories, tell TORCH_TRACE logs from profiler traces, import each, and group them into
// sessions: one per process (a log and a profiler trace of the same pid, or the same rank, are
// joined; see join.h), so a distributed run gives one session per rank.
//
// import_files(request)
//   post: one ImportedSession per group, in the order of the first file of each; every file given
//         (or picked from a directory) is in exactly one. A directory yields its newest *.log by
//         modification time (all of them with all_logs), or, when it holds no logs, its newest
//         profiler trace (*.json, *.json.gz; all with all_logs); skipped_in_dirs counts the rest.
//   error: kiln::Error naming the path: missing, unreadable, an empty directory, or a file that is
//          neither a TORCH_TRACE log nor a Chrome trace.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/importers/torch_trace/torch_trace.h"
#include "engine/session/session.h"

namespace kiln::importers {

enum class InputKind { TorchTrace, ChromeTrace };

struct ImportRequest {
  std::vector<std::string> paths;
  bool all_logs = false;
  TorchTraceOptions trace_options;
};

struct ImportedFile {
  std::string path;
  InputKind kind = InputKind::TorchTrace;
  int64_t pid = -1;
  uint64_t bytes = 0;
  double seconds = 0;  // import time
};

struct ImportedSession {
  session::Session session;
  std::vector<ImportedFile> files;
  std::string label;  // "rank1", or the first file's stem; unique among the result
};

struct ImportResult {
  std::vector<ImportedSession> sessions;
  int skipped_in_dirs = 0;  // logs/traces left in directories (without all_logs)
  std::vector<std::string> not_joined;  // why a profiler trace stayed apart ("pid 1034 ≠ 822")
};

ImportResult import_files(const ImportRequest& request);

// The kind of one file by its first bytes (after gunzip). error: kiln::Error naming it when neither.
InputKind sniff_input(const std::string& path);

}  // namespace kiln::importers
