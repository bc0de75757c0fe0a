// An interpreter over TorchScript nodes: runs a frozen graph node by node through
// LibTorch's own operator implementations, so its results equal module.forward bit
// for bit. Hooks see every node's outputs (shape propagation, capture, checks).
//
// Control flow (prim::If, prim::Loop) is interpreted here; prim::Print writes to a
// sink chosen by the caller; every other node runs its registered Operation.
#pragma once

#include <functional>
#include <memory>
#include <ostream>
#include <unordered_map>
#include <vector>

#include "engine/model/torch_compat.h"

namespace kiln::capture {

using torch::jit::Block;
using torch::jit::Node;
using torch::jit::Value;

struct InterpreterHooks {
  // Called after each node ran, with its outputs (nodes inside blocks included).
  std::function<void(const Node*, const std::vector<c10::IValue>&)> after_node;
  // prim::Print output goes here (std::cout when null).
  std::ostream* print_sink = nullptr;
};

class Interpreter {
 public:
  explicit Interpreter(std::shared_ptr<torch::jit::Graph> graph);

  // inputs: one value per graph input, `self` included (the frozen module object).
  std::vector<c10::IValue> run(const std::vector<c10::IValue>& inputs, const InterpreterHooks& hooks = {});

  // After run() threw: the innermost node that failed (null if none).
  const Node* failed_node() const { return failed_node_; }
  void clear_failure() { failed_node_ = nullptr; }

  const torch::jit::Graph& graph() const { return *graph_; }

  using Env = std::unordered_map<const Value*, c10::IValue>;

  // Runs one node (control flow included) reading its inputs from env; returns its outputs
  // without storing them. Errors are kiln::Error naming the op; failed_node() names it.
  std::vector<c10::IValue> exec_node(const Node* node, Env& env, const InterpreterHooks& hooks = {});
  // Runs a block's nodes, storing outputs in env; returns the block's outputs.
  std::vector<c10::IValue> run_block(const Block* block, Env& env, const InterpreterHooks& hooks = {});

 private:
  std::vector<c10::IValue> exec(const Node* node, Env& env, const InterpreterHooks& hooks);
  torch::jit::Operation& operation(const Node* node);
  bool vararg(const Node* node);

  std::shared_ptr<torch::jit::Graph> graph_;
  std::unordered_map<const Node*, torch::jit::Operation> ops_;
  std::unordered_map<const Node*, bool> vararg_;  // whether the operation reads its argument count
  const Node* failed_node_ = nullptr;
};

// The value of `v` in env; prim::Constant values are materialized on first use.
const c10::IValue& lookup(Interpreter::Env& env, const Value* v);

// Python's print() formatting of TorchScript values ("mid", 3, 0.5, tensors).
std::string format_for_print(const std::vector<c10::IValue>& values);

}  // namespace kiln::capture
