#include "engine/backends/torchscript/torchscript_backend.h"

#include <torch/csrc/jit/api/module.h>

#include <chrono>

#include "engine/model/model_impl.h"

namespace kiln::backends {

namespace {

class OptimizedModule : public runtime::CompiledModel {
 public:
  OptimizedModule(model::Model peer, torch::jit::Module optimized)
      : peer_(std::move(peer)), optimized_(std::move(optimized)) {}
  c10::IValue forward(const std::vector<c10::IValue>& args) override { return optimized_.forward(args); }

 private:
  model::Model peer_;  // the loaded archive the optimized module came from
  torch::jit::Module optimized_;
};

class TorchScriptBackend : public runtime::Backend {
 public:
  std::string name() const override { return "torchscript"; }
  bool whole_model() const override { return true; }
  std::unique_ptr<runtime::CompiledFn> compile(const capture::SpecializedRegion&, const capture::RegionStatic&,
                                               const runtime::BackendOptions&, runtime::RegionArtifacts& art) override {
    art.note = "torchscript compiles whole modules, not captured regions; region runs eagerly";
    return nullptr;
  }
  std::unique_ptr<runtime::CompiledModel> compile_model(const model::Model& model, const std::string& device) override {
    // A fresh copy on the device: optimize_for_inference rewrites the module it is given.
    auto peer = model::load_model(model.path(), device);
    auto t0 = std::chrono::steady_clock::now();
    auto optimized = torch::jit::optimize_for_inference(const_cast<torch::jit::Module&>(peer.impl->frozen));
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    auto out = std::make_unique<OptimizedModule>(std::move(peer), std::move(optimized));
    out->compile_ms = ms;
    return out;
  }
};

}  // namespace

std::unique_ptr<runtime::Backend> make_torchscript_backend() { return std::make_unique<TorchScriptBackend>(); }

}  // namespace kiln::backends
