// GPU activity records as plain values: what the CUPTI adapter (profile/cuda/cupti_trace) reads
// from the Activity API, on the host trace's clock. Correlation ids tie a device record to the
// runtime/driver call that launched it; kernels replayed from a CUDA graph carry the graph launch's
// correlation id and their graph node id.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::profile {

// Graph: one CUDA graph launch's execution as a whole (graph-level tracing, its nodes unrecorded).
enum class GpuActivityKind { Kernel, Memcpy, Memset, Runtime, Driver, Sync, Marker, Graph };

struct GpuActivity {
  GpuActivityKind kind = GpuActivityKind::Kernel;
  std::string name;        // kernel (demangled), API function, memcpy kind, marker text
  int64_t start_ns = 0;    // on the host trace's clock (ns since the HostTrace began)
  int64_t end_ns = 0;
  uint32_t device = 0;
  uint32_t stream = 0;
  uint32_t thread = 0;     // API records: OS thread id
  uint32_t correlation = 0;
  int grid[3] = {0, 0, 0};
  int block[3] = {0, 0, 0};
  int registers = 0;
  int shared_bytes = 0;    // static + dynamic
  uint64_t bytes = 0;      // memcpy / memset
  uint64_t graph_node = 0; // kernels launched from a CUDA graph (0 otherwise)
  uint32_t graph_id = 0;   // kernels launched from a CUDA graph, and Graph records
};

struct GpuTrace {
  std::vector<GpuActivity> records;
  uint64_t dropped = 0;    // records CUPTI could not store (reported, never silent)
  std::string error;       // why tracing did not run ("" when it did)
};

const char* gpu_activity_kind_name(GpuActivityKind k);  // "kernel", "memcpy", ...

}  // namespace kiln::profile
