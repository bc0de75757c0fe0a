// The compiler's stages, declared once: the name a stage has in sessions and in the workbench's
// stage tabs, and the file its output is dumped to (kiln compile --dump DIR, KILN_DUMP_DIR).
#pragma once

#include <string>

namespace kiln::pipeline {

struct Stage {
  const char* name;       // "lowered"
  const char* dump_file;  // "10_lowered.txt"
};

inline constexpr Stage kCaptured{"captured", "00_captured.txt"};
inline constexpr Stage kLowered{"lowered", "10_lowered.txt"};
inline constexpr Stage kLoopsBeforeFusion{"loops_before_fusion", "20_loops_before_fusion.txt"};
inline constexpr Stage kLoopsAfterFusion{"loops_after_fusion", "21_loops_after_fusion.txt"};
inline constexpr Stage kFusionDecisions{"fusion_decisions", "22_fusion_decisions.txt"};
inline constexpr Stage kMemoryPlan{"memory_plan", "23_memory_plan.txt"};
inline constexpr Stage kKernelsCpp{"kernels", "30_kernels.cpp"};
inline constexpr Stage kKernelsCuda{"kernels", "30_kernels.cu"};

// The stage a dump file holds: "21_loops_after_fusion.txt" -> "loops_after_fusion".
std::string stage_of_dump(const std::string& dump_file);

}  // namespace kiln::pipeline
