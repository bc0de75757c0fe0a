// Cuts a frozen forward graph into maximal capturable regions and the graph breaks between them.
//
// partition_graph(graph, sources, options)
//   pre:  graph is frozen and inlined (as load_model leaves it).
//   post: every top-level node belongs to exactly one step; a Region step holds consecutive
//         capturable nodes (control flow decidable at capture time included); an Interpret step
//         holds the nodes that break the graph and the scalar glue after them; a Branch step is
//         an if whose condition depends on tensor data (or whose bodies break), with one
//         sub-program per block. Regions are numbered in execution order, sub-programs included.
//         Constants belong to no step (the runtime materializes them where used).
#pragma once

#include <optional>
#include <set>
#include <vector>

#include "engine/capture/capture_types.h"
#include "engine/capture/node_origin.h"
#include "engine/model/torch_compat.h"

namespace kiln::capture {

struct Program;

struct RegionStatic {
  int index = 0;
  std::vector<const torch::jit::Node*> nodes;    // top-level nodes of the region, in order
  std::vector<const torch::jit::Value*> inputs;  // values used inside, defined before
  std::vector<const torch::jit::Value*> outputs; // values defined inside, used after
};

struct Step {
  enum class Kind { Region, Interpret, Branch };
  Kind kind = Kind::Region;
  int region = -1;                               // Region: index into Partition::regions
  std::vector<const torch::jit::Node*> nodes;    // Interpret: nodes run by the interpreter
  std::vector<int> breaks;                       // indices into Partition::breaks raised by this step
  const torch::jit::Node* control = nullptr;     // Branch: the prim::If
  std::vector<Program> blocks;                   // Branch: one program per block
};

struct Program {
  std::vector<Step> steps;
};

struct PartitionOptions {
  int unroll_limit = 256;  // most nodes a constant loop may unroll into
};

struct Partition {
  Program main;
  std::vector<RegionStatic> regions;
  std::vector<GraphBreak> breaks;
  std::vector<const torch::jit::Node*> break_nodes;  // per break: the node that breaks
  // Non-tensor values that depend on tensor data (item(), bool(t), ...): never specialized.
  std::set<const torch::jit::Value*> data_values;
};

Partition partition_graph(const torch::jit::Graph& graph, SourceFiles& sources, const PartitionOptions& options = {});

// Stable text of a partition: steps in order, region ops with their inputs/outputs, breaks with
// their category, line and reason (the before/after form pass tests compare).
std::string partition_text(const Partition& p);

// Name of a value as the user wrote it: "x" for "x.1", "y" for "y0.3"; "tmp" + id when unnamed.
std::string user_name(const torch::jit::Value* v);

}  // namespace kiln::capture
