// `kiln check`: the accuracy bisector. Runs a model compiled and eager on the same fresh random
// inputs and, when the outputs differ beyond the tolerances, finds where: the first compiled
// region whose outputs differ from an eager run of the same nodes on the same inputs, then the
// first kernel inside it whose outputs differ from the eager values of the nodes it computes.
//
// check_model(model, inputs, options)
//   pre:  one InputSpec per forward argument.
//   post: outputs compared (compare_values: |a - b| <= atol + rtol |b|, NaN only matching NaN).
//         On a mismatch, `regions` lists every compiled region run in execution order with its
//         outputs compared against capture's eager replay of the region on the inputs the
//         compiled run gave it; for the first that differs, `kernels` lists every kernel with
//         its outputs compared against the region's node-by-node eager values (bisect_kernels),
//         and `culprit` points at the first that differs. Kernel buffers are NaN-filled before
//         every compiled run, so a kernel that writes nothing is caught.
//   error: kiln::Error naming the input (model, input count or shapes, backend, tolerances).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/ir/input_spec.h"
#include "engine/capture/capture_types.h"
#include "engine/model/model.h"
#include "engine/commands/kernel_bisect.h"

namespace kiln::runtime {

struct CheckOptions {
  capture::CompileOptions capture;  // backend, mode, dynamic (backend "eager" checks capture alone)
  // Unset: the rule of runtime/compare_values.h for the outputs' dtype and the float32
  // precision in effect (the same as compile and profile use); otherwise the given values.
  std::optional<double> rtol;
  std::optional<double> atol;
  uint64_t seed = 0;                // of the random inputs; 0: a fresh one (reported in the result)
};

struct RegionCheck {
  int region = -1;
  std::string compile_id;          // "[1/0]"
  std::vector<ValueDiff> outputs;  // the region's outputs against eager
  bool ok = true;
};

struct CheckResult {
  std::string model;
  std::string backend;
  std::string mode;
  std::vector<InputSpec> inputs;
  uint64_t seed = 0;
  double rtol = 0, atol = 0;
  bool scale_atol = false;  // TF32's rule: atol scales with each output's magnitude
  std::vector<ValueDiff> outputs;  // the model's outputs against LibTorch eager
  bool match = true;
  std::vector<RegionCheck> regions;   // on a mismatch: every compiled region run, in order
  int first_region = -1;              // index into regions; -1 when none differs
  std::vector<KernelCheck> kernels;   // of the first differing region, in run order
  int culprit = -1;                   // index into kernels; -1 when none differs
  std::string note;                   // why the search stopped short of a kernel, when it did
  std::string precision;              // float32_precision_text() of the run
  // On a mismatch under TF32: the same comparison with TF32 off. "TF32 rounding" when it then
  // matches at the float32 tolerance, "not TF32" when it still differs.
  std::string tf32_verdict;
  double max_rel_without_tf32 = 0;
};

CheckResult check_model(const model::Model& model, const std::vector<InputSpec>& inputs, const CheckOptions& options);

std::string check_text(const CheckResult& r);
std::string check_json(const CheckResult& r);

}  // namespace kiln::runtime
