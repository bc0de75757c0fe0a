#include "engine/commands/check_model.h"
#include "engine/runtime/float_precision.h"


#include <cmath>
#include <random>
#include <sstream>

#include "engine/backends/builtin.h"
#include "engine/base/error.h"
#include "engine/model/model_impl.h"
#include "engine/runtime/captured_runtime.h"
#include "engine/runtime/example_inputs.h"
#include "engine/runtime/region_recorder.h"
#include "engine/model/scoped_print_handler.h"

namespace kiln::runtime {

namespace {

void check_tolerance(const char* flag, double v) {
  if (!std::isfinite(v) || v < 0) {
    std::ostringstream os;
    os << flag << " " << v << ": a tolerance must be a finite number >= 0";
    throw Error(os.str());
  }
}

uint64_t fresh_seed() {
  std::random_device rd;
  uint64_t s = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  return s == 0 ? 1 : s;
}

int region_index(const CapturedRuntime& rt, const capture::RegionStatic* region) {
  const auto& regions = rt.partition().regions;
  for (size_t i = 0; i < regions.size(); ++i)
    if (&regions[i] == region) return static_cast<int>(i);
  return -1;
}

std::string value_name(const capture::SpecializedRegion& entry, const torch::jit::Value* v, size_t position) {
  auto it = entry.name_of.find(v);
  return it != entry.name_of.end() ? it->second : "output " + std::to_string(position);
}

}  // namespace

CheckResult check_model(const model::Model& model, const std::vector<InputSpec>& inputs, const CheckOptions& options) {
  backends::register_builtin_backends();
  if (options.rtol) check_tolerance("--rtol", *options.rtol);
  if (options.atol) check_tolerance("--atol", *options.atol);
  auto names = model.forward_arg_names();
  if (names.size() != inputs.size()) {
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    throw Error(model.path() + ": forward takes " + std::to_string(names.size()) + " input" +
                (names.size() == 1 ? "" : "s") + " (" + list + "), " + std::to_string(inputs.size()) +
                " given (pass one --input per argument)");
  }
  CheckResult r;
  r.model = model.path();
  r.backend = options.capture.backend;
  r.mode = options.capture.mode;
  r.inputs = inputs;
  const bool tf32 = tf32_in_effect(model);
  if (model.device() != "cpu") r.precision = float32_precision_text();
  r.seed = options.seed != 0 ? options.seed : fresh_seed();

  auto x = make_inputs(inputs, r.seed);
  if (model.device() != "cpu")
    for (auto& t : x) t = t.to(torch::Device(model.device()));
  auto log = std::make_shared<std::vector<RegionRun>>();
  CapturedRuntime rt(model, options.capture, make_recording_backend(make_backend(options.capture.backend), log));
  model::ScopedPrintHandler quiet;  // the model's print() output is not the checker's
  torch::NoGradGuard no_grad;
  // Each run gets its own copy of the inputs: in-place ops of one cannot reach the other.
  std::vector<c10::IValue> eager_args;
  for (const auto& t : x) eager_args.push_back(t.clone());
  c10::IValue expected =
      eager_forward(const_cast<torch::jit::Module&>(model.impl->module), eager_args, model.path(), inputs);
  std::vector<at::Tensor> compiled_args;
  for (const auto& t : x) compiled_args.push_back(t.clone());
  std::vector<c10::IValue> outs;
  std::ostringstream printed;
  try {
    outs = rt.run(compiled_args, &printed);
  } catch (const Error& e) {
    throw Error(model.path() + ": compiled forward failed: " + e.what());
  }
  c10::IValue actual = outs.size() == 1 ? outs[0] : c10::IValue(c10::ivalue::Tuple::create(outs));
  const Tolerance rule = tolerance_for(expected, tf32);
  r.rtol = options.rtol.value_or(rule.rtol);
  r.atol = options.atol.value_or(rule.atol);
  r.scale_atol = !options.atol && rule.scale_atol;
  r.outputs = compare_values("output", actual, expected, r.rtol, r.atol, r.scale_atol);
  r.match = all_ok(r.outputs);
  if (!r.match && tf32) {
    // Which is it: TF32's rounding, or a wrong kernel? The same inputs with TF32 off, both sides,
    // held to the float32 rule.
    without_tf32([&] {
      std::vector<c10::IValue> e_args;
      for (const auto& t : x) e_args.push_back(t.clone());
      c10::IValue e = eager_forward(const_cast<torch::jit::Module&>(model.impl->module), e_args, model.path(), inputs);
      CapturedRuntime strict(model, options.capture);
      std::vector<at::Tensor> c_args;
      for (const auto& t : x) c_args.push_back(t.clone());
      std::ostringstream quiet_prints;
      auto o = strict.run(c_args, &quiet_prints);
      c10::IValue a = o.size() == 1 ? o[0] : c10::IValue(c10::ivalue::Tuple::create(o));
      ValueError err = compare_to_eager(a, e, false);
      r.max_rel_without_tf32 = err.max_rel;
      r.tf32_verdict = err.ok ? "TF32 rounding" : "not TF32";
      return 0;
    });
  }
  if (r.match) return r;

  // Regions: each compiled run against capture's eager replay of the region on the same inputs.
  capture::Interpreter interp(model.impl->graph);
  capture::Interpreter::Env reference;
  for (const auto& run : *log) {
    const auto& compiled = *run.compiled;
    RegionCheck rc;
    rc.region = region_index(rt, compiled.region);
    rc.compile_id = compiled.entry.info.compile_id;
    capture::Interpreter::Env env;
    for (size_t i = 0; i < compiled.region->inputs.size() && i < run.inputs.size(); ++i)
      env[compiled.region->inputs[i]] = clone_value(run.inputs[i]);
    capture::run_trace(compiled.entry, interp, env);
    for (size_t j = 0; j < compiled.region->outputs.size() && j < run.outputs.size(); ++j) {
      const auto* v = compiled.region->outputs[j];
      for (auto& d : compare_values(value_name(compiled.entry, v, j), run.outputs[j], capture::lookup(env, v), r.rtol,
                                    r.atol, r.scale_atol))
        rc.outputs.push_back(std::move(d));
    }
    rc.ok = all_ok(rc.outputs);
    if (!rc.ok && r.first_region < 0) {
      r.first_region = static_cast<int>(r.regions.size());
      reference = std::move(env);
    }
    r.regions.push_back(std::move(rc));
  }
  if (r.first_region < 0) {
    r.note = r.regions.empty()
                 ? "no region ran compiled (backend " + r.backend + " left every region eager), yet the outputs differ"
                 : "every compiled region matches its eager replay; the difference arises outside them (interpreted "
                   "code between regions, or values that accumulate small differences across regions)";
    return r;
  }
  const RegionRun& run = (*log)[r.first_region];
  auto* lowered = dynamic_cast<LoweredRegionFn*>(run.compiled->fn);
  if (!lowered) {
    r.note = "backend " + r.backend + " does not run Kiln's generated kernels in this region: there are no kernels to bisect";
    return r;
  }
  r.kernels = bisect_kernels(*lowered, run.compiled->entry, *run.compiled->region, interp, run.inputs, reference,
                             run.compiled->kernels, r.rtol, r.atol);
  for (size_t k = 0; k < r.kernels.size(); ++k)
    if (!r.kernels[k].ok) {
      r.culprit = static_cast<int>(k);
      break;
    }
  if (r.culprit < 0)
    r.note = "every kernel of region " + r.regions[r.first_region].compile_id +
             " matches the eager values of its nodes when fed eager inputs; the difference arises between kernels "
             "(extern or fallback calls, or how the region's outputs are assembled)";
  return r;
}

}  // namespace kiln::runtime
