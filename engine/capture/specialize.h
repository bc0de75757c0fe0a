// Captures one region for concrete inputs: decides capture-time control flow, unrolls constant
// loops, records the guards that make the capture valid, and builds the region's FX-style graph.
//
// specialize_region(region, inputs, dynamic, interp, env)
//   pre:  env holds every region input's value; `dynamic` lists (input position, dim) pairs to
//         treat as symbolic.
//   post: the region ran once (its outputs are in env, computed exactly as module.forward does);
//         the returned entry replays the same ops for any inputs its guards accept.
#pragma once

#include <chrono>
#include <map>
#include <unordered_map>
#include <set>
#include <string>
#include <utility>

#include "engine/base/error.h"
#include "engine/capture/capture_types.h"
#include "engine/capture/interpreter.h"
#include "engine/capture/partition.h"
#include "engine/capture/sym.h"

namespace kiln::capture {

// One instruction of a specialized region: run a node, or copy a value (block results, loop carries).
struct Instr {
  enum class Kind { Exec, Bind, BindInt };
  Kind kind = Kind::Exec;
  const torch::jit::Node* node = nullptr;
  const torch::jit::Value* dst = nullptr;
  const torch::jit::Value* src = nullptr;
  int64_t value = 0;  // BindInt: the loop counter
};

struct InputGuardSpec {
  std::string name;
  bool tensor = false;
  bool undefined_tensor = false;  // an absent optional tensor (need_weights=False attention weights)
  // tensors
  c10::ScalarType dtype = c10::ScalarType::Float;
  c10::Device device = c10::Device(c10::kCPU);
  std::vector<std::optional<int64_t>> sizes;  // nullopt: symbolic
  std::vector<std::string> symbols;           // per dim: symbol name or ""
  std::vector<int64_t> strides;               // static entries: exact strides
  bool contiguous = true;                     // dynamic entries: contiguity only
  bool requires_grad = false;
  // scalars: the specialized value (none for data-dependent scalars, which stay dynamic)
  std::optional<c10::IValue> value;
};

struct DecisionGuard {
  Sym expr;       // the condition over symbols
  bool expected;  // the branch taken
  std::string text;
};

struct SpecializedRegion {
  RegionEntry info;
  // info.graph's nodes back to TorchScript: the node each IR node came from (null for
  // placeholders, get_attr and output) and the IR name of each TorchScript value.
  std::vector<const torch::jit::Node*> graph_nodes;
  std::unordered_map<const torch::jit::Value*, std::string> name_of;
  std::vector<Instr> trace;
  std::vector<InputGuardSpec> inputs;
  std::vector<DecisionGuard> decisions;
  bool grad_mode = false;
};

using DynamicDims = std::set<std::pair<int, int>>;  // (input position, dim)

// Thrown when unrolling makes a region larger than the unroll limit allows.
struct UnrollLimitError : Error {
  using Error::Error;
};

SpecializedRegion specialize_region(const RegionStatic& region, const DynamicDims& dynamic, Interpreter& interp,
                                 Interpreter::Env& env, int unroll_limit, SourceFiles& sources,
                                 const std::set<const torch::jit::Value*>& data_values);



// Runs a compiled region's trace (the eager backend: each op through LibTorch).
void run_trace(const SpecializedRegion& entry, Interpreter& interp, Interpreter::Env& env);

}  // namespace kiln::capture
