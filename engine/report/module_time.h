// Device time by model structure: one run's kernel time per iteration grouped by the nn.Module
// path and by the source line of the graph nodes each kernel came from (as a profiler's module
// view does), read by `kiln diff`.
//
// module_time(session, run)
//   pre:  run as for kernel_stats (a Run::id, or -1 for an imported session's own events).
//   post: every record of kernel_records(s, run) is counted once in `modules` and once in `lines`;
//         each table's rows add up to total_ns exactly (the unattributed row included), and total_ns
//         equals kernel_stats(s, run).total_ns.
//   A record reaches graph nodes through what launched it: a Kiln kernel or an imported compiled
//   (Triton) kernel by its Kernel::nodes (Kiln's provenance; Inductor's "Topologically Sorted
//   Source Nodes" comment), an extern call by its place among the calls of its op in the region's
//   schedule (the loops_after_fusion stage lists "extern OP -> NODE" in launch order; counted per op,
//   so one extern issued out of order does not shift the others; calls past the list stay unattributed); in an imported run, an extern call of Inductor's generated module
//   (`extern_kernels.mm(...)`, `torch.ops.aten.NAME(...)`, under its source-nodes comment) by its
//   place among the host ops "aten::NAME" inside each Torch-Compiled Region call, a device record
//   belonging to the op whose span holds its launcher. Nodes are looked up in the region's graphs (Kiln's captured
//   graph, Dynamo's output graph, then the other stages), by the compile id of the kernel.
//   - Module: the deepest module holding all of the kernel's nodes whose module is known (a fused
//     kernel of layer1.0.conv1 and layer1.0.bn1 counts for layer1.0). In Kiln's graphs every node
//     knows its module ("" is the model's own forward); in imported FX graphs a node's module is
//     the owner of the parameters it reads (Dynamo's lifted L_self_modules_..._parameters_ names).
//   - Line: the node's file (base name) and line; a kernel fused from nodes of several lines is
//     shared among them in equal parts (whole nanoseconds, the remainder to the first line).
//   What cannot be tied to a node (eager's LibTorch kernels, kernels replayed from a CUDA graph
//   with no name, a kernel whose nodes are in no graph) is the row kUnattributed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/session/session.h"
#include "engine/session/session_rows.h"

namespace kiln::report {

inline constexpr const char* kUnattributed = "(unattributed)";

struct StructureRow {
  std::string key;   // module path ("" = the model's own forward) or "file.py:12"; kUnattributed
  std::string code;  // lines: the source text when the graph recorded it
  int64_t total_ns = 0;  // over the traced window (divide by iterations for per iteration)
  int64_t records = 0;
  bool unattributed = false;
};

struct ModuleTime {
  int run = -1;
  std::string time_source;  // "device" or "host" (kernel_stats)
  int iterations = 1;
  int64_t total_ns = 0;     // the run's kernel time over the traced window
  int64_t records = 0;
  std::vector<StructureRow> modules;  // by module path (self time), sorted by path; unattributed last
  std::vector<StructureRow> lines;    // by file:line, longest first; unattributed last
  int64_t module_attributed_ns() const;
  int64_t line_attributed_ns() const;
  double per_iter_ms(int64_t ns) const { return static_cast<double>(ns) / iterations / 1e6; }
};

ModuleTime module_time(const session::Session& s, int run);
// The same from a session read row by row: the run's events read once, and of them only those the
// analysis looks at (kernel records, launch calls, launcher, region and step spans) kept, without
// their args; the regions and kernels in memory.
ModuleTime module_time(session::SessionRows& rows, int run);

// Module paths as a tree: "layer1.0" is inside "layer1", which is inside "" (the model).
std::string parent_module(const std::string& path);
bool module_contains(const std::string& outer, const std::string& inner);
// "layer1" < "layer1.0" < "layer1.1" < "layer2" < "layer10": by component, numbers as numbers.
bool module_order(const std::string& a, const std::string& b);

}  // namespace kiln::report
