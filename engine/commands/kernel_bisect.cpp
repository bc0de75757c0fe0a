#include "engine/commands/kernel_bisect.h"

#include <functional>
#include <map>
#include <set>

namespace kiln::runtime {

using lowering::Comp;

namespace {

using lowering::collect_loads;

class ReferenceProbe : public StepProbe {
 public:
  ReferenceProbe(const LoweredRegionFn& fn, const capture::SpecializedRegion& entry,
                 const capture::Interpreter::Env& reference, const std::vector<session::Kernel>& kernels, double rtol,
                 double atol)
      : fused_(fn.fused()), rtol_(rtol), atol_(atol) {
    const auto& comps = fused_.program.comps;
    std::map<std::string, const torch::jit::Value*> value_of;
    for (const auto& [v, name] : entry.name_of)
      if (reference.count(v)) value_of.emplace(name, v);
    refs_.resize(comps.size());
    names_.resize(comps.size());
    for (const auto& [name, c] : fn.lowered().tensor_of) {
      if (c < 0 || c >= static_cast<int>(comps.size())) continue;
      if (comps[c].drop_bias) continue;  // holds the product without the bias eager's value has
      auto v = value_of.find(name);
      if (v == value_of.end()) continue;
      const auto& iv = reference.at(v->second);
      if (!iv.isTensor() || !iv.toTensor().defined()) continue;
      if (refs_[c].defined() && names_[c] == comps[c].name) continue;  // prefer the computation's own name
      refs_[c] = iv.toTensor().contiguous();
      names_[c] = name;
    }
    for (const auto& k : fused_.kernels) {
      KernelCheck check;
      check.name = k.name;
      check.nodes = k.nodes;
      for (const auto& sk : kernels)
        if (sk.name == k.name) check.source = sk.source;
      checks_.push_back(std::move(check));
    }
  }

  void before_step(size_t s, std::vector<at::Tensor>& bufs) override {
    const auto& step = fused_.steps[s];
    const auto& comps = fused_.program.comps;
    std::set<int> reads, writes;
    if (step.kind == fusion::Step::Kind::Kernel) {
      for (int c : fused_.kernels[step.index].comps) {
        collect_loads(comps[c].body, reads);
        writes.insert(c);
      }
    } else {
      reads.insert(comps[step.index].deps.begin(), comps[step.index].deps.end());
    }
    for (int c : reads) {
      if (writes.count(c) || !refs_[c].defined() || !bufs[c].defined()) continue;
      if (comps[c].kind == Comp::Kind::Input || comps[c].kind == Comp::Kind::Constant) continue;
      if (bufs[c].numel() != refs_[c].numel()) continue;
      bufs[c].copy_(refs_[c].reshape(bufs[c].sizes()));
    }
  }

  void after_step(size_t s, const std::vector<at::Tensor>& bufs) override {
    const auto& step = fused_.steps[s];
    if (step.kind != fusion::Step::Kind::Kernel) return;
    auto& check = checks_[step.index];
    for (int c : fused_.kernels[step.index].comps) {
      if (!refs_[c].defined()) {
        ++check.unchecked;
        continue;
      }
      at::Tensor expected = refs_[c];
      if (expected.numel() == bufs[c].numel()) expected = expected.reshape(bufs[c].sizes());
      check.outputs.push_back(compare_tensors(names_[c], bufs[c], expected, rtol_, atol_));
      check.ok &= check.outputs.back().ok;
    }
  }

  // In run order.
  std::vector<KernelCheck> results() const {
    std::vector<KernelCheck> out;
    for (const auto& step : fused_.steps)
      if (step.kind == fusion::Step::Kind::Kernel) out.push_back(checks_[step.index]);
    return out;
  }

 private:
  const fusion::FusedProgram& fused_;
  double rtol_, atol_;
  std::vector<at::Tensor> refs_;     // per computation: its eager value (undefined if none)
  std::vector<std::string> names_;   // per computation: the graph value it was compared as
  std::vector<KernelCheck> checks_;  // per kernel index
};

}  // namespace

std::vector<KernelCheck> bisect_kernels(LoweredRegionFn& fn, const capture::SpecializedRegion& entry,
                                        const capture::RegionStatic& region, capture::Interpreter& interp,
                                        const std::vector<c10::IValue>& inputs,
                                        const capture::Interpreter::Env& reference,
                                        const std::vector<session::Kernel>& kernels, double rtol, double atol) {
  ReferenceProbe probe(fn, entry, reference, kernels, rtol, atol);
  capture::Interpreter::Env env;
  for (size_t i = 0; i < region.inputs.size() && i < inputs.size(); ++i) env[region.inputs[i]] = clone_value(inputs[i]);
  fn.run_probed(interp, env, probe);
  return probe.results();
}

}  // namespace kiln::runtime
