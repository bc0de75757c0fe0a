// kiln-nvrtc-worker: compiles CUDA units for the engine (engine/codegen/cuda/nvrtc_run.h). NVRTC runs
// one compile at a time per process, so the engine spawns several of these and reads their CUBINs
// back. Not for running by hand: it reads its units from descriptor 3 and writes to descriptor 4.
#include <sys/prctl.h>

#include <csignal>
#include <cstdio>
#include <cstring>

#include "engine/api/nvrtc_worker.h"

int main(int argc, char** argv) {
  if (argc != 2 || std::strcmp(argv[1], "--kiln-nvrtc-worker") != 0) {
    std::fprintf(stderr, "kiln-nvrtc-worker: started by Kiln to compile CUDA kernels; not for use by hand\n");
    return 2;
  }
  prctl(PR_SET_PDEATHSIG, SIGKILL);  // the engine waiting for it is gone: nothing to write for
  return kiln::codegen::nvrtc_worker_main(3, 4);
}
