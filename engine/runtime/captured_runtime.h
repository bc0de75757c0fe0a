// Runs a captured program: regions through their cache of compiled entries (guarded,
// recompiled on guard failure, automatic dynamic shapes, a per-region cache limit), the rest
// through the interpreter. Records every capture, break, guard failure, recompile and fallback
// as a timestamped event.
#pragma once

#include <chrono>
#include <map>
#include <ostream>
#include <set>
#include <vector>

#include "engine/capture/interpreter.h"
#include "engine/capture/partition.h"
#include "engine/capture/specialize.h"
#include "engine/runtime/backend.h"
#include "engine/model/model_impl.h"

namespace kiln::runtime {

// The words of every EagerFallback event whose region ran eagerly because its compiled code (or its compile) failed:
// the numbers of such a run are eager's (kiln profile marks the run failed by them).
inline constexpr const char* kFailedRunsEagerly = "failed, region runs eagerly";

class CapturedRuntime {
 public:
  // Throws kiln::Error when fullgraph is set and the model has a graph break (naming it and its line).
  CapturedRuntime(const model::Model& model, capture::CompileOptions options);
  // The same with a backend object instead of options.backend's registered one (a wrapper that
  // watches the compiled regions, as `kiln check` does).
  CapturedRuntime(const model::Model& model, capture::CompileOptions options, std::unique_ptr<Backend> backend);

  // One forward call. prim::Print output goes to `print_sink` (std::cout when null).
  std::vector<c10::IValue> run(const std::vector<at::Tensor>& inputs, std::ostream* print_sink = nullptr);

  const capture::Partition& partition() const { return partition_; }
  std::vector<capture::RegionInfo> regions() const;
  const std::vector<capture::Event>& events() const { return events_; }
  const std::vector<int>& break_hits() const { return break_hits_; }
  // Drops every compiled region's CUDA graphs: the next call records them again. False when none held any.
  bool record_graphs_again();
  // Per region, per cache entry: what the backend produced.
  const std::vector<RegionArtifacts>& artifacts(int region) const { return caches_.at(region).artifacts; }

 private:
  struct RegionCache {
    std::vector<capture::SpecializedRegion> entries;
    capture::DynamicDims dynamic;
    bool limit_reached = false;
    std::set<size_t> failed;  // entries whose compiled code threw on inputs their guards passed (said once)
    std::vector<std::shared_ptr<CompiledFn>> fns;  // per entry; null: replay the captured trace
    std::vector<RegionArtifacts> artifacts;        // per entry
  };
  using Env = capture::Interpreter::Env;

  void run_program(const capture::Program& p, Env& env);
  void run_region(int r, Env& env);
  void run_eager(const capture::RegionStatic& region, Env& env);
  void check_exported_shapes(const std::vector<at::Tensor>& inputs) const;
  std::map<std::pair<int, int>, model::ExportedDim> exported_dynamic_dims(const capture::RegionStatic& region) const;
  void event(capture::Event::Kind k, int region, const std::string& compile_id, const std::string& message);

  model::Model model_;
  capture::CompileOptions options_;
  capture::SourceFiles sources_;
  capture::Partition partition_;
  capture::Interpreter interp_;
  std::vector<RegionCache> caches_;
  std::unique_ptr<Backend> backend_;
  std::vector<capture::Event> events_;
  std::vector<int> break_hits_;
  capture::InterpreterHooks hooks_;
  std::chrono::steady_clock::time_point start_;
  int call_ = -1;
};

}  // namespace kiln::runtime
