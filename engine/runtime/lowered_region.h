// Runs a lowered, fused region: host ops (sizes) through the interpreter, generated kernels on
// buffers LibTorch allocates, extern and fallback calls through LibTorch's own ops.
#pragma once

#include <functional>
#include <map>
#include <unordered_map>
#include <vector>

#include "engine/fusion/schedule.h"
#include "engine/lowering/lower_graph.h"
#include "engine/runtime/backend.h"

namespace kiln::runtime {

using KernelCall = std::function<void(void* const*, const double*, const int64_t*)>;

class LoweredRegionFn : public CompiledFn {
 public:
  LoweredRegionFn(const capture::CompiledRegion& entry, const capture::RegionStatic& region,
                  lowering::LoweredRegion lowered, fusion::FusedProgram fused, std::vector<KernelCall> kernels,
                  std::shared_ptr<void> keep_alive);
  void run(capture::Interpreter& interp, capture::Interpreter::Env& env) override;

 private:
  std::vector<const torch::jit::Node*> graph_nodes_;
  std::unordered_map<const torch::jit::Value*, std::string> name_of_;
  std::map<std::string, const torch::jit::Value*> value_of_;
  std::vector<capture::InputGuardSpec> inputs_;
  std::vector<const torch::jit::Value*> region_inputs_;
  std::vector<const torch::jit::Value*> region_outputs_;
  lowering::LoweredRegion lowered_;
  fusion::FusedProgram fused_;
  std::vector<KernelCall> kernels_;
  std::shared_ptr<void> keep_alive_;
  std::string compile_id_;
};

}  // namespace kiln::runtime
