// `kiln compile`: capture a model, compile every region with a backend, check the result against
// LibTorch eager, and report kernels, fusion, externs, fallbacks and compile time per stage.
#pragma once

#include <string>
#include <vector>

#include "engine/ir/input_spec.h"
#include "engine/capture/capture_types.h"
#include "engine/model/model.h"
#include "engine/runtime/backend.h"

namespace kiln::runtime {

struct RegionCompileReport {
  int region = -1;
  std::string compile_id;
  int graph_ops = 0;
  RegionArtifacts artifacts;
};

struct CompileResult {
  std::string model;
  std::string backend;
  std::string mode;
  std::vector<InputSpec> inputs;
  std::vector<RegionCompileReport> regions;
  int graph_breaks = 0;
  double capture_ms = 0;     // first call: capture + compile + run
  double max_abs_error = 0;  // vs LibTorch eager, over the checked calls and every output
  double max_rel_error = 0;  // max |a-b| / max(|b|) per output (runtime/compare_values.h)
  double tolerance = 0;      // the rule that applies (tolerance_for the outputs' dtype): rtol ...
  double atol = 0;           // ... and atol, element-wise |a-b| <= atol + rtol |b|
  bool within_tolerance = false;
  std::string mismatch;      // why an output could not be compared (sizes, types), else ""
  bool eager_constant = false;  // eager's floating outputs were constant on every call: the check is blind
  int checks = 0;            // calls checked (fresh random inputs each)
  std::string precision;     // float32_precision_text() the check ran under
  int compiler_invocations = 0;
  int cache_hits = 0;
  std::string cuda_build_arch;  // options.cuda_build_arch: CUDA kernels built, not run (the check ran eager's regions)
};

// Compiles with options.backend and runs `checks` calls on fresh random inputs, comparing each
// output with module.forward. dump_dir: when not empty, every region's stage texts are written
// there as <region>_<entry>/<NN_stage>.
CompileResult compile_model(const model::Model& model, const std::vector<InputSpec>& inputs,
                            const capture::CompileOptions& options, const std::string& dump_dir = "", int checks = 3);

std::string compile_text(const CompileResult& r);
std::string compile_json(const CompileResult& r);

}  // namespace kiln::runtime
