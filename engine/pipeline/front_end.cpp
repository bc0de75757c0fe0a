#include "engine/pipeline/front_end.h"

#include <limits>
#include <chrono>

#include "engine/ir/print_text.h"
#include "engine/lowering/attention.h"
#include "engine/lowering/channels_last.h"
#include "engine/lowering/split_reduction.h"
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
  lowering::LowerOptions lo;
  lo.attention = s.options.attention;
  lo.attention_float32 = s.options.attention_float32;
  lo.depthwise = s.options.depthwise;
  lo.pool_windows = s.options.pool_windows;
  s.out.lowered = lowering::lower_graph(s.graph, lo);
  if (s.options.attention_host_bound)
    for (auto& c : s.out.lowered.program.comps)
      if (c.kind == lowering::Comp::Kind::Extern && c.target == lowering::kAttentionTarget) c.attn_host_bound = true;
  std::string notes;
  for (const auto& n : s.out.lowered.notes) notes += n + "\n";
  s.dump(kLowered, notes + lowering::loop_program_text(s.out.lowered.program));
}

// How a region's convolutions are stored: channels-last or row-major, and whether their constant weights
// are converted once and kept; `why` is the dump's line about it ("" without conv weights to convert).
struct ConvLayout {
  bool channels_last = true;
  bool keep_weight_copies = true;
  std::string why;
};

ConvLayout conv_layout(const lowering::LoopProgram& p, const FrontEndOptions& o) {
  using CW = FrontEndOptions::ConvWeights;
  const int64_t weights = lowering::conv_weight_copy_bytes(p);
  if (weights == 0) return {};
  auto bytes = [](int64_t b) { return b < 0 ? std::string("symbolic") : std::to_string(b) + " bytes"; };
  if (o.conv_weights == CW::Kept) return {true, true, "# conv weights: channels-last copies kept (" + bytes(weights) + ")\n"};
  const bool per_call = o.conv_weights == CW::PerCall;
  if (per_call && !o.row_major_when_weights_dominate)
    return {true, false, "# conv weights: converted by each call (no copies kept)\n"};
  const int64_t eager = lowering::eager_activation_peak(p);
  const bool outweigh = weights >= 0 && eager >= 0 && weights > eager;
  if (per_call && outweigh)
    return {false, false, "# layout: row-major (conv weights " + std::to_string(weights) +
                              " bytes, more than eager's activation peak of about " + std::to_string(eager) +
                              " bytes: converting them every call would cost more than channels-last saves)\n"};
  if (per_call) return {true, false, "# conv weights: converted by each call (no copies kept)\n"};
  return {true, !outweigh,
          "# conv weights: " + std::string(outweigh ? "converted by each call" : "channels-last copies kept") + " (copies " +
              bytes(weights) + ", eager's activation peak " + (eager < 0 ? std::string("symbolic") : "about " + bytes(eager)) +
              ")\n"};
}

void layout(State& s) {
  std::string why;
  if (s.options.channels_last) {
    const ConvLayout choice = conv_layout(s.out.lowered.program, s.options);
    why = choice.why;
    if (choice.channels_last) {
      lowering::choose_channels_last(s.out.lowered.program, choice.keep_weight_copies);
      if (!choice.keep_weight_copies)
        if (int n = lowering::copy_conv_weights_per_call(s.out.lowered))
          why += "# conv weights: " + std::to_string(n) + " copied channels-last by the region's kernels before their convolutions\n";
    }
  }
  if (s.options.linear_bias_in_readers) lowering::move_linear_bias_to_readers(s.out.lowered.program);
  if (s.options.split_reductions)
    for (const auto& note : lowering::split_long_reductions(s.out.lowered)) why += note + "\n";
  s.dump(kLoopsBeforeFusion, why + lowering::loop_program_text(s.out.lowered.program));
}

void schedule(State& s) {
  fusion::FusionOptions fo;
  fo.fuse = s.options.fuse;
  if (!s.options.recompute) fo.recompute_limit = 0;
  if (!s.options.row_stages) fo.stage_rows = std::numeric_limits<int>::max();
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
