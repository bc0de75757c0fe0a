#include "engine/pipeline/front_end.h"

#include <chrono>
#include <functional>

#include "engine/ir/print_text.h"
#include "engine/lowering/channels_last.h"
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
};

struct Pass {
  const char* name;
  std::function<void(State&)> run;
  std::function<std::vector<std::pair<const char*, std::string>>(const State&)> dumps;
  std::function<const lowering::LoopProgram&(const State&)> program;  // what to verify after it
};

const std::vector<Pass>& passes() {
  static const std::vector<Pass> list = {
      {"lower", [](State& s) { s.out.lowered = lowering::lower_graph(s.graph); },
       [](const State& s) {
         return std::vector<std::pair<const char*, std::string>>{
             {kLowered.dump_file, lowering::loop_program_text(s.out.lowered.program)}};
       },
       [](const State& s) -> const lowering::LoopProgram& { return s.out.lowered.program; }},
      {"layout",
       [](State& s) {
         if (s.options.channels_last) lowering::choose_channels_last(s.out.lowered.program);
       },
       [](const State& s) {
         return std::vector<std::pair<const char*, std::string>>{
             {kLoopsBeforeFusion.dump_file, lowering::loop_program_text(s.out.lowered.program)}};
       },
       [](const State& s) -> const lowering::LoopProgram& { return s.out.lowered.program; }},
      {"schedule",
       [](State& s) {
         fusion::FusionOptions fo;
         fo.fuse = s.options.fuse;
         s.out.fused = fusion::schedule(s.out.lowered.program, fo);
       },
       [](const State& s) {
         return std::vector<std::pair<const char*, std::string>>{
             {kLoopsAfterFusion.dump_file, fusion::fused_program_text(s.out.fused)},
             {kFusionDecisions.dump_file, fusion::decisions_text(s.out.fused)}};
       },
       [](const State& s) -> const lowering::LoopProgram& { return s.out.fused.program; }},
      {"plan", [](State& s) { s.out.plan = fusion::plan_memory(s.out.fused); },
       [](const State& s) {
         return std::vector<std::pair<const char*, std::string>>{
             {kMemoryPlan.dump_file, // No bindings: symbolic sizes are unknown at compile time ("-" in the byte counts).
             fusion::memory_plan_text(s.out.fused, s.out.plan)}};
       },
       [](const State& s) -> const lowering::LoopProgram& { return s.out.fused.program; }},
  };
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
  State state{graph, options, {}};
  for (const auto& pass : passes()) {
    auto t0 = Clock::now();
    pass.run(state);
    art.stage_ms.push_back({pass.name, std::chrono::duration<double, std::milli>(Clock::now() - t0).count()});
    for (auto& [file, text] : pass.dumps(state)) art.stages.push_back({file, std::move(text)});
    auto problems = lowering::verify(pass.program(state));
    if (!problems.empty())
      throw lowering::LoweringError(std::string("loop IR does not verify after ") + pass.name + ": " + problems.front());
  }
  return std::move(state.out);
}

}  // namespace kiln::pipeline
