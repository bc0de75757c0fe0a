// Runs a model through capture and a backend for the compiler tests: the stage texts of its
// first region entry and a check against eager.
#pragma once

#include <map>
#include <string>

#include <torch/csrc/jit/runtime/print_handler.h>

#include "engine/pipeline/front_end.h"
#include "engine/runtime/captured_runtime.h"
#include "engine/runtime/example_inputs.h"
#include "tests/support/paths.h"

namespace kiln::test {

struct CompiledModel {
  model::Model model;
  std::unique_ptr<runtime::CapturedRuntime> rt;
  std::map<std::string, std::string> stages;  // first region's first entry
  runtime::RegionArtifacts artifacts;
};

inline CompiledModel compile_example(const std::string& name, const std::string& input,
                                     const std::string& backend = "kiln", const std::string& conv_layout = "auto",
                                     const std::string& depthwise = "auto", const std::string& split_reductions = "auto",
                                     const std::string& pool_windows = "auto") {
  CompiledModel cm;
  cm.model = model::load_model(!name.empty() && name[0] == '/' ? name : example(name));  // a path, or an example
  capture::CompileOptions o;
  o.backend = backend;
  o.conv_layout = conv_layout;
  o.depthwise = depthwise;
  o.split_reductions = split_reductions;
  o.pool_windows = pool_windows;
  o.dynamic = false;
  cm.rt = std::make_unique<runtime::CapturedRuntime>(cm.model, o);
  std::ostringstream printed;
  cm.rt->run(runtime::make_inputs({parse_input_spec(input)}), &printed);
  if (!cm.rt->artifacts(0).empty()) {
    cm.artifacts = cm.rt->artifacts(0)[0];
    for (const auto& s : cm.artifacts.stages) cm.stages[s.file] = s.text;
  }
  return cm;
}

// The first region's first entry through the front end as the GPU's default mode runs it, on the CPU: channels-last
// with conv weights converted per call, producers recomputed in their readers, depthwise convolutions and max_pool2d
// as windows.
inline pipeline::FrontEnd gpu_front_end(CompiledModel& c) {
  pipeline::FrontEndOptions fe;
  fe.channels_last = true;
  fe.recompute = true;
  fe.depthwise = true;
  fe.pool_windows = true;
  fe.conv_weights = pipeline::FrontEndOptions::ConvWeights::PerCall;
  runtime::RegionArtifacts art;
  return pipeline::run_front_end(c.rt->regions().at(0).entries.at(0).graph, fe, art);
}

// max |compiled - eager| / max |eager| over fresh random inputs.
inline double relative_error(CompiledModel& cm, const std::string& input, int trials = 3) {
  double worst = 0;
  for (int i = 0; i < trials; ++i) {
    auto x = runtime::make_inputs({parse_input_spec(input)});
    std::ostringstream printed;
    auto out = cm.rt->run(x, &printed)[0].toTensor().to(at::kDouble);
    torch::NoGradGuard g;
    auto saved = torch::jit::getPrintHandler();
    torch::jit::setPrintHandler([](const std::string&) {});
    auto ref = const_cast<torch::jit::Module&>(cm.model.impl->module).forward({x[0]}).toTensor().to(at::kDouble);
    torch::jit::setPrintHandler(saved);
    double err = (out - ref).abs().max().item<double>() / std::max(ref.abs().max().item<double>(), 1e-12);
    if (std::isnan(err)) err = INFINITY;
    worst = std::max(worst, err);
  }
  return worst;
}

}  // namespace kiln::test
