#include "engine/pipeline/front_end.h"

#include <chrono>

#include "engine/ir/print_text.h"
#include "engine/lowering/channels_last.h"
#include "engine/lowering/linear_bias.h"
#include "engine/lowering/loop_ir.h"
#include "engine/pipeline/stages.h"

namespace kiln::pipeline {

std::string stage_of_dump(const std::string& dump_file) {
  size_t start = dump_file.find('_');
  size_t end = dump_file.find('.');
  if (start == std::string::npos) return dump_file;
  return dump_file.substr(start + 1, end == std::string::npos ? std::string::npos : end - start - 1);
}

namespace {

using Clock = std::chrono::steady_clock;

struct State {
  const ir::Graph& graph;
  const FrontEndOptions& options;
  FrontEnd out;
  bool scheduled = false;
  std::vector<runtime::StageDump> dumps;  // what the passes wrote, in order

  void dump(const Stage& stage, std::string text) { dumps.push_back({stage.dump_file, std::move(text)}); }
  // The loop IR the last pass left: verified after every pass.
  const lowering::LoopProgram& program() const { return scheduled ? out.fused.program : out.lowered.program; }
};

void lower(State& s) {
  s.out.lowered = lowering::lower_graph(s.graph);
  s.dump(kLowered, lowering::loop_program_text(s.out.lowered.program));
}

// Whether channels-last conv weights are converted once and kept; `why` gets a line for the dump.
bool keep_conv_weight_copies(const lowering::LoopProgram& p, FrontEndOptions::ConvWeights choice, std::string& why) {
  using CW = FrontEndOptions::ConvWeights;
  const int64_t copies = lowering::conv_weight_copy_bytes(p);
  if (copies == 0) return true;
  if (choice == CW::Kept) {
    why = "# conv weights: channels-last copies kept (" + std::to_string(copies) + " bytes)\n";
    return true;
  }
  if (choice == CW::PerCall) {
    why = "# conv weights: converted by each call (no copies kept)\n";
    return false;
  }
  const int64_t eager = lowering::eager_activation_peak(p);
  const bool keep = copies < 0 || eager < 0 || copies <= eager;
  why = "# conv weights: " + std::string(keep ? "channels-last copies kept" : "converted by each call") + " (copies " +
        (copies < 0 ? std::string("symbolic") : std::to_string(copies) + " bytes") + ", eager's activation peak " +
        (eager < 0 ? std::string("symbolic") : "about " + std::to_string(eager) + " bytes") + ")\n";
  return keep;
}

void layout(State& s) {
  std::string why;
  if (s.options.channels_last) {
    const auto& p = s.out.lowered.program;
    const int64_t weights = lowering::conv_weight_copy_bytes(p);
    const int64_t eager = s.options.row_major_when_weights_dominate && weights > 0 ? lowering::eager_activation_peak(p) : -1;
    if (weights > 0 && eager >= 0 && weights > eager) {
      why = "# layout: row-major (conv weights " + std::to_string(weights) + " bytes, more than eager's activation peak of about " +
            std::to_string(eager) + " bytes: converting them every call would cost more than channels-last saves)\n";
    } else {
      const bool keep = keep_conv_weight_copies(p, s.options.conv_weights, why);
      lowering::choose_channels_last(s.out.lowered.program, keep);
    }
  }
  if (s.options.linear_bias_in_readers) lowering::move_linear_bias_to_readers(s.out.lowered.program);
  s.dump(kLoopsBeforeFusion, why + lowering::loop_program_text(s.out.lowered.program));
}

void schedule(State& s) {
  fusion::FusionOptions fo;
  fo.fuse = s.options.fuse;
  s.out.fused = fusion::schedule(s.out.lowered.program, fo);
  s.scheduled = true;
  s.dump(kLoopsAfterFusion, fusion::fused_program_text(s.out.fused));
  s.dump(kFusionDecisions, fusion::decisions_text(s.out.fused));
}

void plan(State& s) {
  s.out.plan = fusion::plan_memory(s.out.fused, s.options.gemm_epilogues);
  // No bindings: symbolic sizes are unknown at compile time ("-" in the byte counts).
  s.dump(kMemoryPlan, fusion::memory_plan_text(s.out.fused, s.out.plan));
}

struct Pass {
  const char* name;
  void (*run)(State&);
};

const std::vector<Pass>& passes() {
  static const std::vector<Pass> list = {{"lower", lower}, {"layout", layout}, {"schedule", schedule}, {"plan", plan}};
  return list;
}

}  // namespace

std::vector<std::string> front_end_passes() {
  std::vector<std::string> names;
  for (const auto& p : passes()) names.push_back(p.name);
  return names;
}

FrontEnd run_front_end(const ir::Graph& graph, const FrontEndOptions& options, runtime::RegionArtifacts& art) {
  art.stages.push_back({kCaptured.dump_file, ir::to_readable(graph)});
  State state{graph, options, {}, false, {}};
  for (const auto& pass : passes()) {
    auto t0 = Clock::now();
    pass.run(state);
    art.stage_ms.push_back({pass.name, std::chrono::duration<double, std::milli>(Clock::now() - t0).count()});
    for (auto& d : state.dumps) art.stages.push_back(std::move(d));
    state.dumps.clear();
    auto problems = lowering::verify(state.program());
    if (!problems.empty())
      throw lowering::LoweringError(std::string("loop IR does not verify after ") + pass.name + ": " + problems.front());
  }
  return std::move(state.out);
}

}  // namespace kiln::pipeline
