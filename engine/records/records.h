// What the compiler and the profiler produce: generated kernels with their provenance and
// autotuning tables, fusion decisions, timeline spans. Plain values with no dependency, so the
// stages that make them (codegen, runtime, profile) need nothing above them; the session stores
// them as they are (engine/session/session.h names them session::Kernel, ...).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::records {

struct AutotuneCandidate {
  std::string config;  // "block=256, vec=4"
  double ms = 0;  // negative: not timed (the candidate could not launch; config says why)
  bool chosen = false;
};

struct Kernel {
  std::string name;        // "k0_fused_linear_relu", "triton_poi_fused_add_0"
  std::string compile_id;
  std::string language;    // "cpp", "cuda", "triton", "python"
  std::string source;
  std::vector<std::string> nodes;  // graph nodes it came from (provenance)
  std::string launch_config;
  int registers = 0;
  int shared_bytes = 0;
  std::vector<AutotuneCandidate> autotune;
};

struct FusionDecision {
  std::string compile_id;
  std::string first;
  std::string second;
  bool fused = false;
  std::string reason;
};

// One span or instant on a timeline lane.
struct TimelineEvent {
  int run = -1;              // Run::id (or -1 for import-wide/compile events)
  std::string lane;          // "host:1234", "cuda:0/stream 7", "compile"
  std::string name;
  std::string category;      // "region", "kernel", "guard", "interpreter", "compile", "cpu_op", "memcpy", ...
  int64_t start_ns = 0;
  int64_t dur_ns = 0;        // 0 for instants
  std::string compile_id;
  std::string kernel;        // Kernel::name it belongs to, when known
  int64_t correlation = -1;
  std::string args_json;     // extra fields as a JSON object ("" for none)
};

}  // namespace kiln::records
