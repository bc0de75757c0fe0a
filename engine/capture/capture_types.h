// What capture finds and what the runtime does, as plain values for the CLI, GUI, session
// store and reports: graph breaks, guards, compile ids, recompile reasons and events.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/ir/graph.h"

namespace kiln::capture {

// Stable ids for graph-break categories (Kiln's own registry, in the spirit of Dynamo's GBxxxx).
enum class BreakCategory {
  SideEffect,            // KB001 print, warnings, other side effects
  DataDependentBranch,   // KB002 if/while on a tensor's value
  ScalarExtraction,      // KB003 item(), bool(), int(), float(), tolist() on a tensor
  OpaqueCall,            // KB004 a call Kiln cannot see into or an unknown operator
  DataDependentLoop,     // KB005 a loop whose trip count or condition depends on tensor data
  UnrollLimit,           // KB006 a constant loop too large to unroll
};

struct BreakCategoryInfo {
  const char* id;    // "KB001"
  const char* name;  // "side effect"
};
BreakCategoryInfo break_category_info(BreakCategory c);

struct GraphBreak {
  BreakCategory category = BreakCategory::OpaqueCall;
  std::string id;        // "KB001"
  std::string op;        // the TorchScript op that breaks ("prim::Print")
  std::string reason;    // plain words
  std::string hint;      // how to avoid it
  ir::SourceLoc loc;     // the user's line
  std::string module_path;
  int ends_region = -1;     // the region that ends at this break (-1: none before it)
  int resumes_region = -1;  // the region that starts after it (-1: none)
};

// One guard of a cache entry, printed in Dynamo's spirit.
struct Guard {
  enum class Kind { Dtype, Device, Rank, Size, SymbolicSize, Stride, Contiguous, RequiresGrad, ScalarValue,
                    Decision, GradMode };
  Kind kind = Kind::Size;
  std::string input;     // "x" (empty for global guards)
  int dim = -1;          // for Size / SymbolicSize / Stride
  std::string expected;  // printed expected value ("4", "float32", "s0 > 4")
  std::string text;      // the guard as a user reads it: "x.size(0) == 4", "s0 > 4"
};

struct GuardSet {
  std::vector<Guard> guards;
  std::vector<std::string> symbols;  // "s0 = x.size(0)"
  int64_t evaluations = 0;
  int64_t eval_ns = 0;  // total time spent evaluating this set
};

struct Event {
  enum class Kind { Capture, GraphBreak, GuardFailure, Recompile, RecompileLimit, CacheHit, EagerFallback,
                    UnrollLimit, CudaGraph };  // keep CudaGraph last: name lookups iterate up to it
  Kind kind = Kind::Capture;
  int64_t t_ns = 0;        // since the program started running
  int call = 0;            // which forward call (0-based)
  int region = -1;
  std::string compile_id;  // "[1/0]"
  std::string message;
};
const char* event_kind_name(Event::Kind k);

// One compiled cache entry of a region.
struct RegionEntry {
  std::string compile_id;  // "[r/k]"
  GuardSet guards;
  ir::Graph graph;         // the captured FX-style graph of this specialization
  std::string recompile_reason;  // why this entry was made (empty for the first)
  int64_t hits = 0;
  double compile_ms = 0;
};

struct RegionInfo {
  int index = 0;
  std::vector<std::string> ops;  // ops in the region, static view (before specialization)
  std::vector<RegionEntry> entries;
  bool limit_reached = false;
  ir::SourceLoc first_loc;  // where the region starts in the user's source
};

// Mirrors torch.compile's options.
struct CompileOptions {
  std::string backend = "eager";  // eager, aot_eager, kiln, or a plugin's
  std::string mode = "default";   // default, reduce-overhead, max-autotune
  std::string conv_layout = "auto";  // auto (channels-last on the GPU), channels-last, contiguous
  std::string linear_bias = "auto";  // auto (readers on the GPU but in max-autotune), epilogue, readers
  std::string conv_weights = "auto";  // channels-last conv weights: auto, kept (converted once), per-call
  std::string row_stages = "auto";    // auto (a row kernel takes in the stages around it), separate (their own kernels)
  std::string attention = "auto";     // auto (one call per 16-bit chain on the GPU), fused (all), separate
  std::string depthwise = "auto";     // auto (generated on the GPU), generated (always), extern (cuDNN's)
  std::string split_reductions = "auto";  // auto (long reductions over few rows in two steps on the GPU), on, off
  std::string pool_windows = "auto";  // auto (max_pool2d as a window of taps on the GPU), on, off (a reduction)
  std::string products = "auto";      // 16-bit products on the GPU: auto (cuBLAS, runtime/cuda/half_gemm.h), library, kiln
  std::string cuda_build_arch;        // "sm_90": regions built as for the GPU, for that architecture, not run (kiln backend)
  std::optional<bool> dynamic;  // unset: automatic after the first size change; true: symbolic; false: static
  int cache_limit = 8;          // entries per region before falling back to eager
  bool fullgraph = false;       // a graph break is an error naming it and its line
  bool disable = false;         // run eagerly
  int unroll_limit = 256;       // nodes a constant loop may unroll into
};

}  // namespace kiln::capture
