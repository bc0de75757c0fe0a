#include "engine/runtime/cuda/cuda_driver.h"

#include <cuda.h>
#include <dlfcn.h>

#include <cstring>
#include <mutex>

#include "engine/base/error.h"

namespace kiln::cuda {

namespace {

struct Driver {
  void* lib = nullptr;
  std::string error;
  CUresult (*cuInit)(unsigned) = nullptr;
  CUresult (*cuDriverGetVersion)(int*) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice*, int) = nullptr;
  CUresult (*cuDeviceGetCount)(int*) = nullptr;
  CUresult (*cuDeviceGetName)(char*, int, CUdevice) = nullptr;
  CUresult (*cuDeviceGetAttribute)(int*, CUdevice_attribute, CUdevice) = nullptr;
  CUresult (*cuCtxGetDevice)(CUdevice*) = nullptr;
  CUresult (*cuModuleLoadData)(CUmodule*, const void*) = nullptr;
  CUresult (*cuModuleUnload)(CUmodule) = nullptr;
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*) = nullptr;
  CUresult (*cuFuncGetAttribute)(int*, CUfunction_attribute, CUfunction) = nullptr;
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                             void**, void**) = nullptr;
  CUresult (*cuEventCreate)(CUevent*, unsigned) = nullptr;
  CUresult (*cuEventRecord)(CUevent, CUstream) = nullptr;
  CUresult (*cuEventSynchronize)(CUevent) = nullptr;
  CUresult (*cuEventElapsedTime)(float*, CUevent, CUevent) = nullptr;
  CUresult (*cuEventDestroy)(CUevent) = nullptr;
  CUresult (*cuGetErrorString)(CUresult, const char**) = nullptr;
};

template <typename T>
bool bind(Driver& d, T& fn, const char* name, const char* alt = nullptr) {
  void* p = ::dlsym(d.lib, name);
  if (!p && alt) p = ::dlsym(d.lib, alt);
  fn = reinterpret_cast<T>(p);
  if (!p) d.error = std::string("the GPU driver lacks ") + name;
  return p != nullptr;
}

Driver& driver() {
  static Driver d;
  static std::once_flag once;
  std::call_once(once, [] {
    d.lib = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!d.lib) {
      d.error = "no GPU driver (libcuda.so.1 not found)";
      return;
    }
    bool ok = bind(d, d.cuInit, "cuInit") && bind(d, d.cuDriverGetVersion, "cuDriverGetVersion") &&
              bind(d, d.cuDeviceGet, "cuDeviceGet") && bind(d, d.cuDeviceGetCount, "cuDeviceGetCount") &&
              bind(d, d.cuDeviceGetName, "cuDeviceGetName") && bind(d, d.cuDeviceGetAttribute, "cuDeviceGetAttribute") &&
              bind(d, d.cuCtxGetDevice, "cuCtxGetDevice") && bind(d, d.cuModuleLoadData, "cuModuleLoadData") &&
              bind(d, d.cuModuleUnload, "cuModuleUnload") && bind(d, d.cuModuleGetFunction, "cuModuleGetFunction") &&
              bind(d, d.cuFuncGetAttribute, "cuFuncGetAttribute") && bind(d, d.cuLaunchKernel, "cuLaunchKernel") &&
              bind(d, d.cuEventCreate, "cuEventCreate") && bind(d, d.cuEventRecord, "cuEventRecord") &&
              bind(d, d.cuEventSynchronize, "cuEventSynchronize") &&
              bind(d, d.cuEventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime") &&
              bind(d, d.cuEventDestroy, "cuEventDestroy_v2", "cuEventDestroy") &&
              bind(d, d.cuGetErrorString, "cuGetErrorString");
    if (!ok) return;
    if (d.cuInit(0) != CUDA_SUCCESS) {
      d.error = "the GPU driver did not initialize (cuInit failed)";
      return;
    }
    int count = 0;
    if (d.cuDeviceGetCount(&count) != CUDA_SUCCESS || count == 0) d.error = "no CUDA device";
  });
  return d;
}

void check(CUresult r, const char* what) {
  if (r == CUDA_SUCCESS) return;
  const char* s = nullptr;
  driver().cuGetErrorString(r, &s);
  throw Error(std::string("CUDA driver: ") + what + " failed: " + (s ? s : "unknown error"));
}

Driver& ready() {
  Driver& d = driver();
  if (!d.error.empty()) throw Error("CUDA: " + d.error);
  return d;
}

CUdevice current_device() {
  Driver& d = ready();
  CUdevice dev = 0;
  if (d.cuCtxGetDevice(&dev) != CUDA_SUCCESS) check(d.cuDeviceGet(&dev, 0), "cuDeviceGet");
  return dev;
}

}  // namespace

std::string driver_unavailable_reason() { return driver().error; }
bool driver_available() { return driver().error.empty(); }

std::string device_arch() {
  Driver& d = ready();
  CUdevice dev = current_device();
  int major = 0, minor = 0;
  check(d.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), "cuDeviceGetAttribute");
  check(d.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), "cuDeviceGetAttribute");
  return "sm_" + std::to_string(major) + std::to_string(minor);
}

std::string device_name() {
  Driver& d = ready();
  char name[256] = {0};
  check(d.cuDeviceGetName(name, sizeof name - 1, current_device()), "cuDeviceGetName");
  return name;
}

std::string driver_version() {
  Driver& d = ready();
  int v = 0;
  check(d.cuDriverGetVersion(&v), "cuDriverGetVersion");
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

Module::Module(const std::string& cubin, const std::vector<std::string>& names) {
  Driver& d = ready();
  CUmodule m = nullptr;
  check(d.cuModuleLoadData(&m, cubin.data()), "cuModuleLoadData");
  module_ = m;
  for (const auto& n : names) {
    CUfunction f = nullptr;
    check(d.cuModuleGetFunction(&f, m, n.c_str()), ("cuModuleGetFunction(" + n + ")").c_str());
    functions_[n] = f;
  }
}

Module::~Module() {
  if (module_ && driver().error.empty()) driver().cuModuleUnload(static_cast<CUmodule>(module_));
}

Function Module::function(const std::string& name) const {
  auto it = functions_.find(name);
  if (it == functions_.end()) throw Error("CUDA: kernel " + name + " is not in the module");
  return it->second;
}

int Module::registers(const std::string& name) const {
  int regs = 0;
  driver().cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, static_cast<CUfunction>(function(name)));
  return regs;
}

int Module::max_threads_per_block(const std::string& name) const {
  int threads = 0;
  check(driver().cuFuncGetAttribute(&threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                                    static_cast<CUfunction>(function(name))),
        "cuFuncGetAttribute");
  return threads;
}

void launch(Function f, unsigned grid, unsigned block, unsigned shared_bytes, Stream stream, void* args_block,
            size_t args_size) {
  Driver& d = ready();
  void* params[] = {args_block};
  (void)args_size;
  check(d.cuLaunchKernel(static_cast<CUfunction>(f), grid, 1, 1, block, 1, 1, shared_bytes, static_cast<CUstream>(stream),
                         params, nullptr),
        "cuLaunchKernel");
}

EventTimer::EventTimer(Stream stream) : stream_(stream) {
  Driver& d = ready();
  CUevent a = nullptr, b = nullptr;
  check(d.cuEventCreate(&a, CU_EVENT_DEFAULT), "cuEventCreate");
  check(d.cuEventCreate(&b, CU_EVENT_DEFAULT), "cuEventCreate");
  begin_ = a;
  end_ = b;
}

EventTimer::~EventTimer() {
  if (!driver().error.empty()) return;
  driver().cuEventDestroy(static_cast<CUevent>(begin_));
  driver().cuEventDestroy(static_cast<CUevent>(end_));
}

void EventTimer::start() { check(driver().cuEventRecord(static_cast<CUevent>(begin_), static_cast<CUstream>(stream_)), "cuEventRecord"); }

float EventTimer::stop_ms() {
  Driver& d = ready();
  check(d.cuEventRecord(static_cast<CUevent>(end_), static_cast<CUstream>(stream_)), "cuEventRecord");
  check(d.cuEventSynchronize(static_cast<CUevent>(end_)), "cuEventSynchronize");
  float ms = 0;
  check(d.cuEventElapsedTime(&ms, static_cast<CUevent>(begin_), static_cast<CUevent>(end_)), "cuEventElapsedTime");
  return ms;
}

}  // namespace kiln::cuda
