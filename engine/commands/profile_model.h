// `kiln profile`: runs a model eagerly and in every requested mode/backend, measures each, traces
// the host, and writes one session (a .kiln file) with the capture, compile and run results.
//
// profile_model(model, inputs, options, out_path, progress)
//   post: out_path holds the session header (environment, model, regions and their graphs per stage,
//         graph breaks, guards, recompile events, kernels, fusion decisions) and one committed run per
//         mode/backend that finished, with its timeline; modes the machine cannot run are runs with
//         status "skipped: <reason>". A kill at any moment leaves every finished run readable.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "engine/capture/capture_types.h"
#include "engine/ir/input_spec.h"
#include "engine/model/model.h"
#include "engine/session/session.h"

namespace kiln::runtime {

struct ProfileOptions {
  std::vector<std::string> modes = {"eager", "default"};  // eager, default, reduce-overhead, max-autotune
  std::vector<std::string> backends;                       // extra peers: torchscript, cudagraphs, aot_eager, ...
  int iters = 50;
  int timeline_iters = 3;  // iterations traced into the timeline
  std::string device = "auto";  // auto (cuda when available), cpu, cuda
};

using ProgressFn = std::function<void(const std::string& what, int done, int total)>;

session::Session profile_model(const model::Model& model, const std::vector<InputSpec>& inputs,
                               const ProfileOptions& options, const std::string& out_path,
                               const ProgressFn& progress = nullptr);

// A captured cache entry of `region` as a session stores it: its guards, symbols, compile time, hits,
// recompile reason and the captured graph (stage "captured": text, JSON and DOT).
session::CompiledRegion session_region(int region, const capture::RegionEntry& e);

// The environment Kiln runs in (CPU model, OS, LibTorch; GPU fields empty without a driver).
session::Environment current_environment();

}  // namespace kiln::runtime
