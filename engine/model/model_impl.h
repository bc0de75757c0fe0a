// LibTorch side of a loaded model. Include only from files that already speak LibTorch
// (engine/model, engine/capture, engine/runtime's tensor adapters).
#pragma once

#include <memory>
#include <string>

#include "engine/model/model.h"
#include "engine/model/torch_compat.h"

namespace kiln::model {

struct LoadedModel {
  std::string path;
  std::string device = "cpu";
  bool exported_program = false;  // a .pt2 (model/load_exported.h)
  int retargeted_constants = 0;  // CPU device/tensor constants of a traced graph moved to `device`
  torch::jit::Module module;  // as loaded, in eval mode (the eager reference)
  torch::jit::Module frozen;  // frozen and inlined
  std::shared_ptr<torch::jit::Graph> graph;  // frozen forward graph
  int64_t parameter_count = 0;
  int64_t buffer_count = 0;
};

}  // namespace kiln::model
