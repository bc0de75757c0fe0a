#include "engine/runtime/region_recorder.h"

#include "engine/runtime/compare_values.h"
#include "engine/runtime/lowered_region.h"

namespace kiln::runtime {

namespace {

class RecordingFn : public CompiledFn {
 public:
  RecordingFn(std::unique_ptr<CompiledFn> inner, std::shared_ptr<RecordedCompile> compiled, RegionRunLog log)
      : inner_(std::move(inner)), compiled_(std::move(compiled)), log_(std::move(log)) {
    compiled_->fn = inner_.get();
  }

  void run(capture::Interpreter& interp, capture::Interpreter::Env& env) override {
    RegionRun run;
    run.compiled = compiled_;
    for (const auto* v : compiled_->region->inputs) run.inputs.push_back(clone_value(capture::lookup(env, v)));
    inner_->run(interp, env);
    for (const auto* v : compiled_->region->outputs) run.outputs.push_back(clone_value(capture::lookup(env, v)));
    log_->push_back(std::move(run));
  }
  std::vector<std::string> take_log() override { return inner_->take_log(); }
  std::vector<std::vector<records::AutotuneCandidate>> autotune() const override { return inner_->autotune(); }
  bool record_graphs_again() override { return inner_->record_graphs_again(); }

 private:
  std::unique_ptr<CompiledFn> inner_;
  std::shared_ptr<RecordedCompile> compiled_;
  RegionRunLog log_;
};

class RecordingBackend : public Backend {
 public:
  RecordingBackend(std::unique_ptr<Backend> inner, RegionRunLog log) : inner_(std::move(inner)), log_(std::move(log)) {}
  std::string name() const override { return inner_->name(); }

  std::unique_ptr<CompiledFn> compile(const capture::SpecializedRegion& entry, const capture::RegionStatic& region,
                                      const BackendOptions& options, RegionArtifacts& artifacts) override {
    auto fn = inner_->compile(entry, region, options, artifacts);
    if (!fn) return nullptr;  // the region replays its captured trace: eager, nothing to check
    if (auto* lowered = dynamic_cast<LoweredRegionFn*>(fn.get())) lowered->set_poison_outputs(true);
    auto compiled = std::make_shared<RecordedCompile>();
    compiled->region = &region;
    compiled->entry = entry;
    compiled->kernels = artifacts.kernels;
    return std::make_unique<RecordingFn>(std::move(fn), std::move(compiled), log_);
  }

 private:
  std::unique_ptr<Backend> inner_;
  RegionRunLog log_;
};

}  // namespace

std::unique_ptr<Backend> make_recording_backend(std::unique_ptr<Backend> inner, RegionRunLog log) {
  return std::make_unique<RecordingBackend>(std::move(inner), std::move(log));
}

}  // namespace kiln::runtime
