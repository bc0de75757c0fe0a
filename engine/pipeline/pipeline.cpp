#include "engine/pipeline/pipeline.h"

#include <algorithm>
#include <chrono>

#include "engine/lowering/loop_ir.h"

namespace kiln::pipeline {

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

// What the scheduler decided and what stays outside generated code, for the session.
void record_program(const std::string& compile_id, const FrontEnd& front, runtime::RegionArtifacts& art) {
  for (const auto& d : front.fused.decisions)
    art.decisions.push_back(records::FusionDecision{compile_id, d.first, d.second, d.fused, d.reason});
  for (const auto& c : front.fused.program.comps)
    if (c.kind == lowering::Comp::Kind::Extern)
      art.externs.push_back(c.target + " -> " + c.name +
                            (c.layout.empty() ? "" : " (" + lowering::layout_name(c.layout) + ")"));
  art.fallbacks = front.lowered.fallbacks;
}

}  // namespace

std::vector<std::string> compiler_passes() {
  auto names = front_end_passes();
  names.push_back("emit");
  names.push_back("compile");
  return names;
}

CompiledCode compile_region(const ir::Graph& graph, const std::string& compile_id, const FrontEndOptions& options,
                            Target& target, runtime::RegionArtifacts& art) {
  CompiledCode out;
  out.front = run_front_end(graph, options, art);
  record_program(compile_id, out.front, art);
  const fusion::FusedProgram& fused = out.front.fused;

  auto t0 = Clock::now();
  std::vector<codegen::KernelSpan> spans;
  out.source = target.emit(fused, codegen::node_notes(graph), spans);
  art.stage_ms.push_back({"emit", ms_since(t0)});
  art.stages.push_back({target.kernels_stage().dump_file, out.source});

  auto t1 = Clock::now();
  out.loaded = target.compile(out.source, fused, graph);
  double total = ms_since(t1);
  if (out.loaded.load_ms >= 0) {
    art.stage_ms.push_back({"compile", std::max(0.0, total - out.loaded.load_ms)});
    art.stage_ms.push_back({"load", out.loaded.load_ms});
  } else {
    art.stage_ms.push_back({"compile", total});
  }
  art.cache_hit = out.loaded.cache_hit;
  art.compiler_invocations = out.loaded.compiler_invocations;
  art.compile_unit_ms = out.loaded.unit_ms;
  art.compile_assembled = out.loaded.assembled;
  art.compile_workers = out.loaded.workers;
  art.function_resources = out.loaded.resources;

  // One kernel record per generated kernel, in the fused program's order, for every target.
  for (const auto& k : fused.kernels) {
    records::Kernel record;
    record.name = k.name;
    record.compile_id = compile_id;
    record.language = target.language();
    record.source = codegen::kernel_text(out.source, spans, k.name);
    record.nodes = k.nodes;
    target.describe(k, record);
    art.kernels.push_back(std::move(record));
  }
  return out;
}

}  // namespace kiln::pipeline
