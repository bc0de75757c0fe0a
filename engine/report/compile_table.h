// What an imported torch.compile log says about each compile, compactly, as tlparse lays it out:
// one row per compile id (where the time went: Dynamo, AOT autograd, Inductor; cache hits and
// misses; guard and op counts), the compiles that failed or restarted, and the configuration keys
// that differ from Dynamo's and Inductor's defaults. Reports and the workbench read it here.
//
// compile_rows(session)
//   post: one row per compiled region entry that carries torch.compile's compilation metrics
//         (imported logs); Kiln's own compiles have none and give no rows. Times are -1 where the
//         log did not record them.
// config_differences(session)
//   post: for each key of the logged dynamo_config / inductor_config whose value differs from the
//         known default, or differs between compiles of the log: the key, the values seen and the
//         compile ids. Keys neither known nor differing are counted in `hidden`.
#pragma once

#include <string>
#include <vector>

#include "engine/session/session.h"

namespace kiln::report {

struct CompileRow {
  std::string compile_id;
  std::string frame;        // "fn at file.py:12"
  double total_ms = -1;     // the whole frame's compile
  double dynamo_ms = -1, aot_ms = -1, inductor_ms = -1;
  std::string cache;        // "fx graph miss, AOT autograd hit", "" when not logged
  int guards = -1, graph_ops = -1;
  std::string fail_type, fail_reason;
  std::vector<std::string> restart_reasons;
};

std::vector<CompileRow> compile_rows(const session::Session& s);
// A row's restart reasons as one line ("a; b"), for a table cell.
std::string restarts_text(const CompileRow& row);

struct ConfigDifference {
  std::string config;  // "dynamo" or "inductor"
  std::string key;
  std::string value;   // the value logged (the first one, when compiles differ)
  std::string default_value;  // "" when not known
  std::vector<std::string> compile_ids;  // where the value was logged
  bool differs_between_compiles = false;
};

struct ConfigDifferences {
  std::vector<ConfigDifference> keys;
  int hidden = 0;  // keys at their default, or unknown and the same in every compile
};

ConfigDifferences config_differences(const session::Session& s);

// Metrics keys the table above shows (or deliberately leaves to JSON): a report lists a region's
// other metrics only.
bool is_compile_metric(const std::string& key);

}  // namespace kiln::report
