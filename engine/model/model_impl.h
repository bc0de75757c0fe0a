// LibTorch side of a loaded model. Include only from files that already speak LibTorch
// (engine/model, engine/capture, engine/runtime's tensor adapters).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/model/model.h"
#include "engine/model/torch_compat.h"

namespace kiln::model {

// One input dimension of an exported program: a number the program was exported for, or a
// symbol (torch.export.Dim) with the range its range_constraints give.
struct ExportedDim {
  int input = 0;        // forward argument
  int dim = 0;
  int64_t size = -1;    // a static dimension's size; -1 for a symbolic one
  std::string symbol;   // "s77" (the program's symbol) for a symbolic dimension
  int64_t min = 0, max = INT64_MAX;  // its range (inclusive)
};

struct LoadedModel {
  std::string path;
  std::string device = "cpu";
  bool exported_program = false;  // a .pt2 (model/load_exported.h)
  std::vector<std::vector<ExportedDim>> exported_inputs;  // per forward argument, per dim (a .pt2's tensors)
  int retargeted_constants = 0;  // CPU device/tensor constants of a traced graph moved to `device`
  torch::jit::Module module;  // as loaded, in eval mode (the eager reference)
  torch::jit::Module frozen;  // frozen and inlined
  std::shared_ptr<torch::jit::Graph> graph;  // frozen forward graph
  int64_t parameter_count = 0;
  int64_t buffer_count = 0;
};

}  // namespace kiln::model
