// Reading the texts Dynamo writes into TORCH_TRACE logs: graph-break reasons (the
// dynamo_graph_break_reason artifact and compilation_metrics.restart_reasons), the C++ guard tree
// (dynamo_cpp_guards_str) and user stacks. Pure functions of text; nothing here touches a session.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "engine/capture/capture_types.h"
#include "engine/ir/graph.h"

namespace kiln::importers {

// A graph break in Dynamo's words.
struct DynamoBreak {
  std::string title;        // "Failed to trace builtin operator" (first line of the reason)
  std::string explanation;  // the "Explanation:" text, "" when the reason is one line (older torch)
  std::vector<std::string> hints;  // each "Hint:" text
  std::string url;          // "For more details ... visit: <url>", "" when absent
  ir::SourceLoc loc;        // "Graph break in user code at file:line" (+ the code of that frame)
  std::vector<std::string> user_stack;  // "file:line in fn", innermost last

  std::string reason() const;  // title, then ": explanation" when there is one
  std::string hint() const;    // hints one per line, then "See <url>"
};

// The dynamo_graph_break_reason artifact: location, reason block and "User code traceback:".
// post: title is never empty for a non-empty payload (the first line is used when no structure is found).
DynamoBreak parse_graph_break_artifact(std::string_view payload);

// One entry of compilation_metrics.restart_reasons (structured in torch ≥ 2.6, one line before).
DynamoBreak parse_restart_reason(std::string_view text);

// Kiln's category for a Dynamo break, from its words (print → side effect, item() → scalar
// extraction, data-dependent branching → data-dependent branch, anything else → opaque call).
capture::BreakCategory classify_break(const DynamoBreak& b);

// The leaf guards of a TREE_GUARD_MANAGER dump: "TENSOR_MATCH: check_tensor(L['x'], ...)", without
// the "# source" comments and without the GuardManager (accessor) lines, in tree order.
std::vector<std::string> guards_from_cpp_tree(std::string_view tree);

// The lines of a Python-style traceback ("  File \"f.py\", line 3, in g" + code line) as
// "f.py:3 in g" frames, innermost last; *innermost_code receives the last frame's code line.
std::vector<std::string> frames_from_traceback(std::string_view text, std::string* innermost_code = nullptr);

}  // namespace kiln::importers
