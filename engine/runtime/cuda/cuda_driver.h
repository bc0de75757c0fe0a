// The CUDA driver API, loaded at run time (dlopen of libcuda.so.1) so Kiln starts on machines with
// no NVIDIA driver. The only file that includes cuda.h. Errors are kiln::Error naming the call.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace kiln::cuda {

// "" when the driver loaded and a device answers; else why not ("no GPU driver (libcuda.so.1 not found)").
std::string driver_unavailable_reason();
bool driver_available();
std::string device_arch();     // "sm_90" for the current device
std::string device_name();
std::string driver_version();  // "13.0"

using Function = void*;  // CUfunction
using Stream = void*;    // CUstream

class Module {
 public:
  Module(const std::string& cubin, const std::vector<std::string>& names);  // cuModuleLoadData + cuModuleGetFunction
  ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  Function function(const std::string& name) const;
  int registers(const std::string& name) const;
  // The most threads a block of this kernel may have (its registers and shared memory decide;
  // a launch with more fails with "too many resources requested for launch").
  int max_threads_per_block(const std::string& name) const;

 private:
  void* module_ = nullptr;
  std::map<std::string, Function> functions_;
};

// cuLaunchKernel with one by-value argument block (the generated KilnArgs).
void launch(Function f, unsigned grid, unsigned block, unsigned shared_bytes, Stream stream, void* args_block,
            size_t args_size);

// Milliseconds between two points on a stream (cuEvent pair), for autotuning.
class EventTimer {
 public:
  explicit EventTimer(Stream stream);
  ~EventTimer();
  void start();
  float stop_ms();  // synchronizes

 private:
  Stream stream_;
  void* begin_ = nullptr;
  void* end_ = nullptr;
};

}  // namespace kiln::cuda
