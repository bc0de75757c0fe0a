// The NVRTC worker's entry point, for app/nvrtc_worker.cpp (kiln-nvrtc-worker): the engine spawns such
// workers to compile CUDA units side by side (engine/codegen/cuda/nvrtc_compiler.h). The worker links
// engine/codegen/cuda/nvrtc_run.cpp and NVRTC alone, not the engine library.
#pragma once

#include "engine/codegen/cuda/nvrtc_run.h"  // kiln::codegen::nvrtc_worker_main(in_fd, out_fd)
