#include "engine/capture/partition.h"

#include <functional>
#include <sstream>
#include <unordered_set>

namespace kiln::capture {

using torch::jit::Block;
using torch::jit::Node;
using torch::jit::Value;

std::string user_name(const Value* v) {
  std::string n = v->hasDebugName() ? v->debugName() : "";
  if (n.empty() || std::isdigit(static_cast<unsigned char>(n[0]))) return v->node()->kind().toUnqualString();
  auto dot = n.find('.');
  if (dot != std::string::npos) n = n.substr(0, dot);
  // TorchScript renames reassigned variables y -> y0, y1; show the user's name.
  while (n.size() > 1 && std::isdigit(static_cast<unsigned char>(n.back()))) n.pop_back();
  return n.empty() ? "tmp" + std::to_string(v->unique()) : n;
}

namespace {

bool is_tensor(const Value* v) { return v->type()->kind() == c10::TypeKind::TensorType; }

bool is_scalar_extraction(const Node* n) {
  static const std::set<std::string> ops = {"aten::item",   "aten::Bool",   "aten::Int",      "aten::Float",
                                            "aten::tolist", "aten::is_nonzero", "aten::ScalarImplicit",
                                            "aten::equal",  "aten::allclose",   "aten::FloatImplicit",
                                            "aten::IntImplicit"};
  if (!ops.count(n->kind().toQualString())) return false;
  for (const Value* in : n->inputs())
    if (is_tensor(in)) return true;
  return false;
}

bool is_side_effect(const Node* n) {
  // prim::RaiseException is not here: an assert on shapes is decided at capture time (and raising
  // ends the call as it would eagerly), as Dynamo turns shape asserts into guards.
  static const std::set<std::string> ops = {"prim::Print", "aten::warn", "prim::SetAttr",
                                            "aten::manual_seed", "prim::Enter", "prim::Exit"};
  return ops.count(n->kind().toQualString()) > 0;
}

bool is_opaque(const Node* n) {
  auto k = n->kind();
  if (k == c10::prim::CallFunction || k == c10::prim::CallMethod || k == c10::prim::PythonOp) return true;
  std::string ns = k.domainString().empty() ? std::string(k.toQualString()) : k.domainString();
  std::string q = k.toQualString();
  bool known_ns = q.rfind("aten::", 0) == 0 || q.rfind("prim::", 0) == 0;
  return !known_ns;
}

struct Classifier {
  SourceFiles& sources;
  const PartitionOptions& options;
  Partition& out;
  std::unordered_set<const Value*> data_scalars;   // non-tensor values that depend on tensor data
  std::unordered_set<const Value*> shape_tensors;  // tensors made from sizes (traced NumToTensor)

  GraphBreak make_break(const Node* n, BreakCategory c, const std::string& reason, const std::string& hint) {
    GraphBreak b;
    b.category = c;
    b.id = break_category_info(c).id;
    b.op = n->kind().toQualString();
    b.reason = reason;
    b.hint = hint;
    auto o = node_origin(n, sources);
    b.loc = o.loc;
    b.module_path = o.module_path;
    return b;
  }

  bool any_data_input(const Node* n) {
    for (const Value* in : n->inputs())
      if (data_scalars.count(in)) return true;
    return false;
  }

  void mark_outputs_data(const Node* n) {
    for (const Value* o : n->outputs())
      if (!is_tensor(o)) data_scalars.insert(o);
  }

  // Only feeds if/loop conditions (so the branch, not the extraction, is the break users see).
  static bool only_feeds_conditions(const Node* n) {
    for (const Value* o : n->outputs())
      for (const auto& u : o->uses()) {
        const Node* user = u.user;
        bool cond = (user->kind() == c10::prim::If && u.offset == 0) ||
                    (user->kind() == c10::prim::Loop && u.offset == 1) ||
                    (user->kind() == c10::aten::__not__);
        if (!cond) return false;
      }
    return true;
  }

  // Arithmetic on sizes turned into 0-d tensors (traced code: `seq_len + past_length`): every tensor
  // operand is such a size tensor or a constant, so the result is a size too and reading it back
  // with int() is no break (Dynamo keeps these symbolic).
  bool is_shape_math(const Node* n) const {
    static const std::set<std::string> ops = {"aten::add", "aten::sub", "aten::mul", "aten::div", "aten::floor_divide",
                                              "aten::remainder", "aten::rsub", "aten::neg", "aten::floor", "aten::ceil",
                                              "aten::to", "aten::type_as", "aten::detach", "aten::clone",
                                              "aten::contiguous", "aten::trunc", "aten::abs"};
    if (!ops.count(n->kind().toQualString())) return false;
    bool any_shape = false;
    for (const Value* in : n->inputs()) {
      if (data_scalars.count(in)) return false;
      if (!is_tensor(in)) continue;
      if (shape_tensors.count(in)) {
        any_shape = true;
        continue;
      }
      if (in->node()->kind() != c10::prim::Constant) return false;
      auto iv = torch::jit::toIValue(in);
      if (!iv || !iv->isTensor() || iv->toTensor().dim() != 0) return false;
    }
    return any_shape;
  }

  enum class Cls { Capturable, Glue, Break, Branch, InterpretLoop };

  // Classifies without side effects on `out` (used to look inside blocks).
  bool block_is_capturable(const Block* b) {
    for (const Node* n : b->nodes()) {
      if (n->kind() == c10::prim::Constant) continue;
      GraphBreak dummy;
      auto c = classify(n, nullptr);
      if (c != Cls::Capturable) return false;
    }
    return true;
  }

  static int count_nodes(const Block* b) {
    int n = 0;
    for (const Node* node : b->nodes()) {
      ++n;
      for (const Block* sub : node->blocks()) n += count_nodes(sub);
    }
    return n;
  }

  Cls classify(const Node* n, GraphBreak* brk) {
    const auto k = n->kind();
    if (k == c10::prim::NumToTensor) {
      shape_tensors.insert(n->output());
      if (any_data_input(n)) return Cls::Glue;
      return Cls::Capturable;
    }
    if (is_shape_math(n)) {
      for (const Value* o : n->outputs())
        if (is_tensor(o)) shape_tensors.insert(o);
      return Cls::Capturable;
    }
    if (is_scalar_extraction(n)) {
      bool from_shape = true;
      for (const Value* in : n->inputs())
        if (is_tensor(in) && !shape_tensors.count(in)) from_shape = false;
      if (from_shape) return Cls::Capturable;
      mark_outputs_data(n);
      if (only_feeds_conditions(n)) return Cls::Glue;  // the if/loop reports the break
      if (brk) {
        std::string call = std::string(k.toUnqualString());
        *brk = make_break(n, BreakCategory::ScalarExtraction,
                          call == "item" ? "Tensor.item() reads a value out of a tensor; the value is not known "
                                           "while capturing"
                                         : call + "() on a tensor reads its value; the value is not known while capturing",
                          "keep the value as a 0-d tensor (e.g. use the tensor in arithmetic directly), or move the "
                          "scalar read out of the compiled function");
      }
      return Cls::Break;
    }
    if (is_side_effect(n)) {
      if (brk)
        *brk = make_break(n, BreakCategory::SideEffect,
                          k == c10::prim::Print ? "print() is a side effect; the compiler cannot capture it"
                                                : std::string(k.toQualString()) + " has a side effect the compiler cannot capture",
                          k == c10::prim::Print ? "remove the print, or guard it with a flag that is off while compiling"
                                                : "move the side effect out of the compiled function");
      return Cls::Break;
    }
    if (k == c10::prim::If) {
      bool data = data_scalars.count(n->input(0)) > 0;
      if (data) {
        mark_outputs_data_if_scalar(n);
        if (brk)
          *brk = make_break(n, BreakCategory::DataDependentBranch,
                            "the if condition depends on a tensor's value, so which branch runs is only known at run time",
                            "compute both branches and select with torch.where(cond, a, b), or use torch.cond");
        return Cls::Branch;
      }
      for (const Block* b : n->blocks())
        if (!block_is_capturable(b)) return Cls::Branch;
      return Cls::Capturable;
    }
    if (k == c10::prim::Loop) {
      bool data = data_scalars.count(n->input(0)) || data_scalars.count(n->input(1));
      for (const Value* r : n->blocks()[0]->outputs())
        if (data_scalars.count(r) && r == n->blocks()[0]->outputs()[0]) data = true;
      if (data) {
        mark_outputs_data_if_scalar(n);
        if (brk)
          *brk = make_break(n, BreakCategory::DataDependentLoop,
                            "the loop's trip count or condition depends on a tensor's value",
                            "loop a fixed number of times and mask, or move the loop out of the compiled function");
        return Cls::InterpretLoop;
      }
      if (!block_is_capturable(n->blocks()[0])) {
        if (brk)
          *brk = make_break(n, BreakCategory::OpaqueCall, "the loop body contains a graph break",
                            "move the breaking statement out of the loop");
        return Cls::InterpretLoop;
      }
      auto trip = torch::jit::toIValue(n->input(0));
      if (trip && trip->isInt() && trip->toInt() * count_nodes(n->blocks()[0]) > options.unroll_limit) {
        if (brk)
          *brk = make_break(n, BreakCategory::UnrollLimit,
                            "the loop runs " + std::to_string(trip->toInt()) + " times; unrolled it would exceed " +
                                std::to_string(options.unroll_limit) + " nodes",
                            "raise the unroll limit, or shorten the loop");
        return Cls::InterpretLoop;
      }
      return Cls::Capturable;
    }
    if (is_opaque(n)) {
      if (brk)
        *brk = make_break(n, BreakCategory::OpaqueCall,
                          std::string(k.toQualString()) + " is a call Kiln cannot look into",
                          "make the callee scriptable, or move it out of the compiled function");
      return Cls::Break;
    }
    if (any_data_input(n)) {
      bool makes_tensor = false;
      for (const Value* o : n->outputs()) makes_tensor |= is_tensor(o);
      if (!makes_tensor) {
        mark_outputs_data(n);
        return Cls::Glue;
      }
    }
    return Cls::Capturable;
  }

  void mark_outputs_data_if_scalar(const Node* n) { mark_outputs_data(n); }

  Program program(const Block* b) {
    Program p;
    for (const Node* n : b->nodes()) {
      if (n->kind() == c10::prim::Constant) continue;
      GraphBreak brk;
      brk.ends_region = -2;  // marker: unset
      Cls c = classify(n, &brk);
      bool has_break = brk.ends_region != -2 || !brk.reason.empty();
      int break_index = -1;
      if (!brk.reason.empty()) {
        brk.ends_region = -1;
        out.breaks.push_back(brk);
        out.break_nodes.push_back(n);
        break_index = static_cast<int>(out.breaks.size()) - 1;
      }
      (void)has_break;
      switch (c) {
        case Cls::Capturable: {
          if (p.steps.empty() || p.steps.back().kind != Step::Kind::Region) {
            Step s;
            s.kind = Step::Kind::Region;
            s.region = static_cast<int>(out.regions.size());
            out.regions.push_back(RegionStatic{s.region, {}, {}, {}});
            p.steps.push_back(std::move(s));
          }
          out.regions[p.steps.back().region].nodes.push_back(n);
          break;
        }
        case Cls::Glue:
        case Cls::Break:
        case Cls::InterpretLoop: {
          if (p.steps.empty() || p.steps.back().kind != Step::Kind::Interpret) {
            Step s;
            s.kind = Step::Kind::Interpret;
            p.steps.push_back(std::move(s));
          }
          p.steps.back().nodes.push_back(n);
          if (break_index >= 0) p.steps.back().breaks.push_back(break_index);
          break;
        }
        case Cls::Branch: {
          Step s;
          s.kind = Step::Kind::Branch;
          s.control = n;
          if (break_index >= 0) s.breaks.push_back(break_index);
          p.steps.push_back(std::move(s));
          // Sub-programs are built after the step is placed, so their regions number after it.
          std::vector<Program> blocks;
          for (const Block* sub : n->blocks()) blocks.push_back(program(sub));
          p.steps.back().blocks = std::move(blocks);
          break;
        }
      }
    }
    return p;
  }
};

void collect_defs(const Node* n, std::unordered_set<const Value*>& defs, std::unordered_set<const Node*>& nodes) {
  nodes.insert(n);
  for (const Value* o : n->outputs()) defs.insert(o);
  for (const Block* b : n->blocks()) {
    for (const Value* p : b->inputs()) defs.insert(p);
    for (const Node* sub : b->nodes()) collect_defs(sub, defs, nodes);
  }
}

void collect_uses(const Node* n, std::vector<const Value*>& uses) {
  for (const Value* in : n->inputs()) uses.push_back(in);
  for (const Block* b : n->blocks()) {
    for (const Node* sub : b->nodes()) collect_uses(sub, uses);
    for (const Value* r : b->outputs()) uses.push_back(r);
  }
}

void region_io(RegionStatic& r) {
  std::unordered_set<const Value*> defs;
  std::unordered_set<const Node*> nodes;
  for (const Node* n : r.nodes) collect_defs(n, defs, nodes);
  std::unordered_set<const Value*> seen;
  for (const Node* n : r.nodes) {
    std::vector<const Value*> uses;
    collect_uses(n, uses);
    for (const Value* v : uses) {
      if (defs.count(v) || v->node()->kind() == c10::prim::Constant) continue;
      if (v->node()->kind() == c10::prim::Param && v->type()->kind() == c10::TypeKind::ClassType) continue;
      if (seen.insert(v).second) r.inputs.push_back(v);
    }
  }
  for (const Node* n : r.nodes) {
    for (const Value* o : n->outputs()) {
      bool used_outside = false;
      for (const auto& u : o->uses()) {
        const Node* user = u.user;
        // Walk up to see whether the user sits inside one of the region's nodes.
        bool inside = false;
        for (const Node* p = user; p; p = p->owningBlock() ? p->owningBlock()->owningNode() : nullptr) {
          if (nodes.count(p)) {
            inside = true;
            break;
          }
        }
        if (!inside) used_outside = true;
      }
      if (used_outside) r.outputs.push_back(o);
    }
  }
}

void link_breaks(const Program& p, Partition& part, int& last_region, std::vector<int>& pending) {
  for (const Step& s : p.steps) {
    if (s.kind == Step::Kind::Region) {
      for (int b : pending) part.breaks[b].resumes_region = s.region;
      pending.clear();
      last_region = s.region;
      continue;
    }
    for (int b : s.breaks) {
      part.breaks[b].ends_region = last_region;
      pending.push_back(b);
    }
    for (const Program& sub : s.blocks) link_breaks(sub, part, last_region, pending);
  }
}

void program_text(const Program& p, const Partition& part, const std::string& indent, std::ostringstream& os) {
  auto values = [](const std::vector<const Value*>& vs) {
    std::string s;
    for (const Value* v : vs) s += (s.empty() ? "" : ", ") + user_name(v);
    return s;
  };
  for (const Step& s : p.steps) {
    switch (s.kind) {
      case Step::Kind::Region: {
        const auto& r = part.regions[s.region];
        os << indent << "region " << r.index << " (" << values(r.inputs) << ") -> (" << values(r.outputs) << ")\n";
        for (const Node* n : r.nodes) os << indent << "  " << n->kind().toQualString() << "\n";
        break;
      }
      case Step::Kind::Interpret:
        os << indent << "interpret\n";
        for (const Node* n : s.nodes) os << indent << "  " << n->kind().toQualString() << "\n";
        break;
      case Step::Kind::Branch:
        os << indent << "branch on " << user_name(s.control->input(0)) << "\n";
        for (size_t b = 0; b < s.blocks.size(); ++b) {
          os << indent << "  block" << b << ":\n";
          program_text(s.blocks[b], part, indent + "    ", os);
        }
        break;
    }
    for (int b : s.breaks) {
      const auto& gb = part.breaks[b];
      os << indent << "  ! break " << gb.id << " at " << gb.loc.str() << ": " << gb.reason << "\n";
    }
  }
}

}  // namespace

std::string partition_text(const Partition& p) {
  std::ostringstream os;
  program_text(p.main, p, "", os);
  return os.str();
}

Partition partition_graph(const torch::jit::Graph& graph, SourceFiles& sources, const PartitionOptions& options) {
  Partition part;
  Classifier c{sources, options, part, {}, {}};
  part.main = c.program(graph.block());
  for (auto& r : part.regions) region_io(r);
  part.data_values.insert(c.data_scalars.begin(), c.data_scalars.end());
  int last = -1;
  std::vector<int> pending;
  link_breaks(part.main, part, last, pending);
  return part;
}

}  // namespace kiln::capture
