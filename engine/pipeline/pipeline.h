// The whole compiler for one captured region, as one flat list of named passes run by one driver
// (the shape of Halide's Lower.cpp and Inductor's per-pass logging):
//
//   lower     graph -> loop IR: decompositions, views as index arithmetic, externs   10_lowered.txt
//   layout    storage order of convolution chains (channels-last where chosen)       20_loops_before_fusion.txt
//   schedule  which computations share a kernel, and why not                         21_loops_after_fusion.txt
//                                                                                    22_fusion_decisions.txt
//   plan      buffer lifetimes, shared slots, planned peak (fusion/memory_plan.h)    23_memory_plan.txt
//   emit      fused program -> source for the target, with each kernel's span         30_kernels.cpp | .cu
//   compile   source -> loaded kernels (the target's compiler and loader)            (cache hits counted)
//
// The first four passes are the front end (front_end.h); a Target supplies the last two and what
// its kernel records say about launching. Capture (capture/) runs before, once per region entry.
//
// compile_region(graph, compile_id, options, target, art)
//   post: every pass is timed into art.stage_ms under its name ("compile" split into "compile" and
//         "load" where the target loads separately), its output dumped into art.stages (stages.h),
//         the loop IR verified after each front-end pass; art.decisions, art.externs, art.fallbacks
//         and one kernel record per generated kernel (same builder for every target) filled in.
//   error: lowering::LoweringError when the graph cannot be lowered or a pass leaves loop IR that
//          does not verify (the caller runs the region eagerly); a compiler error propagates.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/codegen/emitted.h"
#include "engine/pipeline/front_end.h"
#include "engine/pipeline/stages.h"
#include "engine/runtime/backend.h"
#include "engine/runtime/lowered_region.h"

namespace kiln::pipeline {

// What the compile pass hands back: callable kernels in the order of the fused program's kernels.
struct Loaded {
  std::vector<runtime::KernelCall> calls;
  std::shared_ptr<void> keep;      // keeps the library or modules alive while calls exist
  double load_ms = -1;             // part of the pass spent loading (dlopen, cuModuleLoad); -1: not separate
  bool cache_hit = false;          // every binary came from the disk cache
  int compiler_invocations = 0;    // compilers actually run (cache misses)
  std::vector<double> unit_ms;     // each compiler run's own time (units compiled side by side: their sum exceeds the wall)
  int workers = 1;                 // processes the compiler runs were shared among
  int assembled = 0;               // of the compiler runs, those that only assembled another unit's PTX (same code)
  std::vector<runtime::FunctionResources> resources;  // each GPU function's registers and stack, from its binary
};

// A code generation target: C++ for the CPU, CUDA for NVIDIA GPUs.
class Target {
 public:
  virtual ~Target() = default;
  virtual const char* language() const = 0;      // the kernel records' language: "cpp", "cuda"
  virtual const Stage& kernels_stage() const = 0;  // where the emitted source is dumped
  // emit: the source of every kernel of `fused`, and where each kernel's function lies in it.
  virtual std::string emit(const fusion::FusedProgram& fused, const std::vector<codegen::NodeNote>& notes,
                           std::vector<codegen::KernelSpan>& spans) = 0;
  // compile: the emitted source built and loaded; called once, after emit. `graph` is the region's
  // captured graph (what its externs' literal arguments are), for work a target does while its compiler runs.
  virtual Loaded compile(const std::string& source, const fusion::FusedProgram& fused, const ir::Graph& graph) = 0;
  // What a kernel record says beyond the shared fields: launch configuration, registers.
  virtual void describe(const fusion::FusedKernel& kernel, records::Kernel& record) const = 0;
};

struct CompiledCode {
  FrontEnd front;
  std::string source;  // the emitted source (also dumped)
  Loaded loaded;
};

CompiledCode compile_region(const ir::Graph& graph, const std::string& compile_id, const FrontEndOptions& options, Target& target,
                              runtime::RegionArtifacts& art);

// Every pass name, in order: front_end_passes() then "emit", "compile".
std::vector<std::string> compiler_passes();

}  // namespace kiln::pipeline
