#include "engine/profile/cuda/cupti_trace.h"

#include <cupti.h>
#include <cxxabi.h>
#include <dlfcn.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "engine/base/error.h"

namespace kiln::profile {

namespace {

constexpr size_t kBufferBytes = 8u << 20;
constexpr size_t kAlign = 8;

// Process-wide: CUPTI delivers completed buffers on its own thread.
struct Collector {
  std::mutex mu;
  std::vector<GpuActivity> records;
  std::map<uint32_t, GpuActivity> open_markers;  // NVTX range id → start record
  // Launching calls stamped by the callback API (CuptiApiRecords::Callbacks): kept raw on the hot path,
  // named at stop.
  struct ApiCall {
    uint64_t start, end;
    uint32_t correlation, thread, cbid;
    bool runtime;
  };
  std::mutex api_mu;  // its own lock: the launching thread never waits on a buffer's conversion
  std::vector<ApiCall> api_calls;
  CUpti_SubscriberHandle subscriber = nullptr;
  uint64_t dropped = 0;
  int64_t offset_ns = 0;
  bool active = false;
  bool steady_stamps = false;  // CUPTI stamps records on the host trace's clock (steady_ns)
};
Collector& collector() {
  static Collector c;
  return c;
}

// The host trace's clock (std::chrono::steady_clock, CLOCK_MONOTONIC), handed to CUPTI for its records: by
// default CUPTI stamps with CLOCK_REALTIME, whose offset to the host spans' clock drifts while NTP slews it,
// by microseconds over a window, enough to put a launch outside the few-µs span that made it.
uint64_t CUPTIAPI steady_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

std::string demangle(const char* name) {
  if (!name) return "";
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status != 0 || !d) return name;
  std::string out(d);
  std::free(d);
  return out;
}

std::string api_name(CUpti_CallbackDomain domain, uint32_t cbid) {
  const char* name = nullptr;
  if (cuptiGetCallbackName(domain, cbid, &name) == CUPTI_SUCCESS && name) return name;
  return "cbid " + std::to_string(cbid);
}

const char* copy_kind(uint8_t k) {
  switch (k) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "memcpy HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "memcpy DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "memcpy DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return "memcpy HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return "memcpy PtoP";
    default: return "memcpy";
  }
}

void check(CUptiResult r, const char* what) {
  if (r == CUPTI_SUCCESS) return;
  const char* text = nullptr;
  cuptiGetResultString(r, &text);
  throw Error(std::string("CUPTI: ") + what + " failed: " + (text ? text : "unknown error"));
}

// Activity buffers come from a pool filled (and its pages touched) when tracing starts, so a buffer
// CUPTI asks for on the launching thread costs neither an allocation nor page faults there.
struct BufferPool {
  std::mutex mu;
  std::vector<uint8_t*> free;
};
BufferPool& buffer_pool() {
  static BufferPool p;
  return p;
}
uint8_t* new_buffer() {
  auto* b = static_cast<uint8_t*>(std::aligned_alloc(kAlign, kBufferBytes));
  if (b) std::memset(b, 0, kBufferBytes);
  return b;
}
void fill_buffer_pool(size_t n) {
  auto& p = buffer_pool();
  std::lock_guard<std::mutex> lock(p.mu);
  while (p.free.size() < n)
    if (uint8_t* b = new_buffer()) p.free.push_back(b);
    else break;
}
void release_buffer(uint8_t* b) {
  auto& p = buffer_pool();
  std::lock_guard<std::mutex> lock(p.mu);
  if (p.free.size() < 4) p.free.push_back(b);
  else std::free(b);
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  uint8_t* b = nullptr;
  {
    auto& p = buffer_pool();
    std::lock_guard<std::mutex> lock(p.mu);
    if (!p.free.empty()) {
      b = p.free.back();
      p.free.pop_back();
    }
  }
  if (!b) b = static_cast<uint8_t*>(std::aligned_alloc(kAlign, kBufferBytes));
  *buffer = b;
  *size = b ? kBufferBytes : 0;
  *max_records = 0;
}

// The fields kernel, memcpy and memset records share.
template <typename Record>
void device_fields(GpuActivity& a, const Record* r, int64_t offset_ns) {
  a.start_ns = static_cast<int64_t>(r->start) + offset_ns;
  a.end_ns = static_cast<int64_t>(r->end) + offset_ns;
  a.device = r->deviceId;
  a.stream = r->streamId;
  a.correlation = r->correlationId;
  a.graph_node = r->graphNodeId;
  a.graph_id = r->graphId;
}

void convert(const CUpti_Activity* rec, Collector& c) {
  auto t = [&](uint64_t ts) { return static_cast<int64_t>(ts) + c.offset_ns; };
  GpuActivity a;
  switch (rec->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
      a.kind = GpuActivityKind::Kernel;
      a.name = demangle(k->name);
      device_fields(a, k, c.offset_ns);
      a.grid[0] = k->gridX, a.grid[1] = k->gridY, a.grid[2] = k->gridZ;
      a.block[0] = k->blockX, a.block[1] = k->blockY, a.block[2] = k->blockZ;
      a.registers = k->registersPerThread;
      a.shared_bytes = k->staticSharedMemory + k->dynamicSharedMemory;
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(rec);
      a.kind = GpuActivityKind::Memcpy;
      a.name = copy_kind(m->copyKind);
      device_fields(a, m, c.offset_ns);
      a.bytes = m->bytes;
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(rec);
      a.kind = GpuActivityKind::Memset;
      a.name = "memset";
      device_fields(a, m, c.offset_ns);
      a.bytes = m->bytes;
      break;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
      auto* api = reinterpret_cast<const CUpti_ActivityAPI*>(rec);
      bool runtime = rec->kind == CUPTI_ACTIVITY_KIND_RUNTIME;
      a.kind = runtime ? GpuActivityKind::Runtime : GpuActivityKind::Driver;
      a.name = api_name(runtime ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API, api->cbid);
      a.start_ns = t(api->start);
      a.end_ns = t(api->end);
      a.thread = api->threadId;
      a.correlation = api->correlationId;
      break;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
      auto* s = reinterpret_cast<const CUpti_ActivitySynchronization2*>(rec);
      a.kind = GpuActivityKind::Sync;
      a.name = s->type == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE  ? "context synchronize"
               : s->type == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE ? "stream synchronize"
               : s->type == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE  ? "event synchronize"
                                                                                    : "stream wait event";
      a.start_ns = t(s->start);
      a.end_ns = t(s->end);
      a.stream = s->streamId;
      a.correlation = s->correlationId;
      break;
    }
    case CUPTI_ACTIVITY_KIND_MARKER: {
      auto* m = reinterpret_cast<const CUpti_ActivityMarker2*>(rec);
      if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_START) {
        GpuActivity open;
        open.kind = GpuActivityKind::Marker;
        open.name = m->name ? m->name : "";
        open.start_ns = t(m->timestamp);
        c.open_markers[m->id] = open;
      } else if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_END) {
        auto it = c.open_markers.find(m->id);
        if (it == c.open_markers.end()) return;
        a = it->second;
        a.end_ns = t(m->timestamp);
        c.open_markers.erase(it);
        break;
      }
      return;
    }
    case CUPTI_ACTIVITY_KIND_GRAPH_TRACE: {
      const auto* g = reinterpret_cast<const CUpti_ActivityGraphTrace2*>(rec);
      if (g->start == 0 && g->end == 0) return;  // CUPTI could not time it
      a.kind = GpuActivityKind::Graph;
      a.name = "graph " + std::to_string(g->graphId);
      a.start_ns = t(g->start);
      a.end_ns = t(g->end);
      a.device = g->deviceId;
      a.stream = g->streamId;
      a.correlation = g->correlationId;
      a.graph_id = g->graphId;
      break;
    }
    default:
      return;
  }
  c.records.push_back(std::move(a));
}

void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t size, size_t valid) {
  auto& c = collector();
  {
    std::lock_guard<std::mutex> lock(c.mu);
    CUpti_Activity* rec = nullptr;
    while (valid > 0 && cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) convert(rec, c);
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS) c.dropped += dropped;
  }
  release_buffer(buffer);
}

const CUpti_ActivityKind kKinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,           CUPTI_ACTIVITY_KIND_MEMSET,
    CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,   CUPTI_ACTIVITY_KIND_MARKER,
};
const CUpti_ActivityKind kApiKinds[] = {CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER};

// Whether a runtime or driver call puts work on the device (a launch, a graph launch, a copy, a set)
// or waits for it: the calls a device record's correlation id can name, and the ones the timeline
// shows. Everything else LibTorch and the libraries call per op (device and stream queries, event
// records, attribute reads) would cost a record each and attribute nothing.
bool api_recorded(const std::string& name) {
  for (const char* word : {"Launch", "Memcpy", "Memset", "Synchronize", "StreamWait"})
    if (name.find(word) != std::string::npos) return true;
  return false;
}

// Records of the calls api_recorded names only; every call when KILN_CUPTI_ALL_API is set. CUPTI's
// documented order: the API kinds enabled (every call), then the calls not wanted switched off one by
// one (a switch that fails leaves that call recorded: more records, never fewer). Enabling single calls
// without the kinds gave no API records at all on CUDA 13 (the device records then named no launching
// call, and extern kernels no graph node). Returns the kinds to disable at stop.
std::vector<CUpti_ActivityKind> enable_api_records() {
  std::vector<CUpti_ActivityKind> enabled;
  for (auto kind : kApiKinds) {
    check(cuptiActivityEnable(kind), "cuptiActivityEnable");
    enabled.push_back(kind);
  }
  const char* all = std::getenv("KILN_CUPTI_ALL_API");
  if (all && *all) return enabled;
  for (uint32_t cbid = 1; cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE; ++cbid)
    if (!api_recorded(api_name(CUPTI_CB_DOMAIN_RUNTIME_API, cbid))) cuptiActivityEnableRuntimeApi(cbid, 0);
  for (uint32_t cbid = 1; cbid < CUPTI_DRIVER_TRACE_CBID_SIZE; ++cbid)
    if (!api_recorded(api_name(CUPTI_CB_DOMAIN_DRIVER_API, cbid))) cuptiActivityEnableDriverApi(cbid, 0);
  return enabled;
}

// CuptiApiRecords::Callbacks: entry and exit of the recorded calls, stamped on CUPTI's clock.
void CUPTIAPI on_api_call(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  const auto* d = static_cast<const CUpti_CallbackData*>(data);
  uint64_t now = 0;
  if (collector().steady_stamps)
    now = steady_ns();
  else
    cuptiGetTimestamp(&now);
  if (d->callbackSite == CUPTI_API_ENTER) {
    *d->correlationData = now;
    return;
  }
  auto& c = collector();
  thread_local uint32_t tid = static_cast<uint32_t>(syscall(SYS_gettid));
  std::lock_guard<std::mutex> lock(c.api_mu);
  c.api_calls.push_back({*d->correlationData, now, d->correlationId, tid, static_cast<uint32_t>(cbid),
                         domain == CUPTI_CB_DOMAIN_RUNTIME_API});
}

void subscribe_api_callbacks(Collector& c) {
  c.subscriber = nullptr;
  check(cuptiSubscribe(&c.subscriber, on_api_call, nullptr), "cuptiSubscribe");
  for (uint32_t cbid = 1; cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE; ++cbid)
    if (api_recorded(api_name(CUPTI_CB_DOMAIN_RUNTIME_API, cbid)))
      cuptiEnableCallback(1, c.subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, cbid);
  for (uint32_t cbid = 1; cbid < CUPTI_DRIVER_TRACE_CBID_SIZE; ++cbid)
    if (api_recorded(api_name(CUPTI_CB_DOMAIN_DRIVER_API, cbid)))
      cuptiEnableCallback(1, c.subscriber, CUPTI_CB_DOMAIN_DRIVER_API, cbid);
}

void unsubscribe_api_callbacks(Collector& c) {
  if (!c.subscriber) return;
  cuptiUnsubscribe(c.subscriber);
  c.subscriber = nullptr;
}

void disable_api_records() {
  for (auto kind : kApiKinds) cuptiActivityDisable(kind);
  // The per-call switches back on, so the next enable starts from CUPTI's default (every call).
  for (uint32_t cbid = 1; cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE; ++cbid) cuptiActivityEnableRuntimeApi(cbid, 1);
  for (uint32_t cbid = 1; cbid < CUPTI_DRIVER_TRACE_CBID_SIZE; ++cbid) cuptiActivityEnableDriverApi(cbid, 1);
  for (auto kind : kApiKinds) cuptiActivityDisable(kind);
}

std::atomic<bool> g_nvtx_at_cupti{false};

// NVTX ranges reach CUPTI only through NVTX's injection hook, read once at the first NVTX call.
void point_nvtx_at_cupti() {
  if (std::getenv("NVTX_INJECTION64_PATH")) return;
  g_nvtx_at_cupti = true;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&cuptiActivityEnable), &info) && info.dli_fname)
    setenv("NVTX_INJECTION64_PATH", info.dli_fname, 0);
}

}  // namespace

namespace {
// The driver's entry points, from the driver CUDA already loaded (Kiln never links libcuda).
template <typename F>
F driver_fn(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
}
}  // namespace

const char* cupti_api_records_name(CuptiApiRecords a) {
  switch (a) {
    case CuptiApiRecords::Activity: return "activity";
    case CuptiApiRecords::Callbacks: return "callbacks";
    case CuptiApiRecords::None: return "none";
  }
  return "activity";
}

CuptiOptions default_cupti_options() {
  CuptiOptions o;
  if (const char* m = std::getenv("KILN_CUPTI_MARKERS")) o.markers = std::string(m) == "1";
  if (const char* s = std::getenv("KILN_CUPTI_SYNCS")) o.syncs = std::string(s) == "1";
  if (const char* all = std::getenv("KILN_CUPTI_ALL_API"); all && *all) o.api = CuptiApiRecords::Activity;
  if (const char* api = std::getenv("KILN_CUPTI_API")) {
    std::string v = api;
    if (v == "callbacks") o.api = CuptiApiRecords::Callbacks;
    else if (v == "none") o.api = CuptiApiRecords::None;
    else if (v == "activity") o.api = CuptiApiRecords::Activity;
  }
  return o;
}

std::string cupti_unavailable_reason() {
  uint32_t version = 0;
  CUptiResult r = cuptiGetVersion(&version);
  if (r != CUPTI_SUCCESS) {
    const char* text = nullptr;
    cuptiGetResultString(r, &text);
    return std::string("CUPTI: ") + (text ? text : "not usable");
  }
  return "";
}

CuptiTrace::CuptiTrace(std::chrono::steady_clock::time_point host_origin, const CuptiOptions& options)
    : options_(options) {
  auto& c = collector();
  {
    std::lock_guard<std::mutex> lock(c.mu);
    if (c.active) throw Error("CUPTI: a trace is already running in this process");
    c.records.clear();
    c.open_markers.clear();
    c.dropped = 0;
  }
  {
    std::lock_guard<std::mutex> lock(c.api_mu);
    c.api_calls.clear();
    c.api_calls.reserve(1 << 16);
  }
  fill_buffer_pool(2);
  if (options_.markers) point_nvtx_at_cupti();
  // Before any kind is enabled (CUPTI's rule), so every record is stamped on the host spans' clock; an older
  // CUPTI without it: one offset between the clocks, measured now.
  const bool steady = cuptiActivityRegisterTimestampCallback(steady_ns) == CUPTI_SUCCESS;
  if (steady) {
    offset_ns_ = -std::chrono::duration_cast<std::chrono::nanoseconds>(host_origin.time_since_epoch()).count();
  } else {
    uint64_t ts = 0;
    check(cuptiGetTimestamp(&ts), "cuptiGetTimestamp");
    auto host_now = std::chrono::steady_clock::now();
    int64_t host_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(host_now - host_origin).count();
    offset_ns_ = host_ns - static_cast<int64_t>(ts);
  }
  {
    std::lock_guard<std::mutex> lock(c.mu);
    c.offset_ns = offset_ns_;
    c.steady_stamps = steady;
    c.active = true;
  }
  check(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed), "cuptiActivityRegisterCallbacks");
  std::vector<CUpti_ActivityKind> kinds;
  if (options_.graph_level) kinds.push_back(CUPTI_ACTIVITY_KIND_GRAPH_TRACE);
  for (auto kind : kKinds) {
    if (kind == CUPTI_ACTIVITY_KIND_MARKER && !options_.markers) continue;
    if (kind == CUPTI_ACTIVITY_KIND_SYNCHRONIZATION && !options_.syncs) continue;
    if (kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && !options_.kernel_records) continue;
    kinds.push_back(kind);
  }
  auto undo = [&] {
    for (auto k : kinds) cuptiActivityDisable(k);
    if (options_.api == CuptiApiRecords::Activity) disable_api_records();
    unsubscribe_api_callbacks(c);
    std::lock_guard<std::mutex> lock(c.mu);
    c.active = false;
  };
  for (auto kind : kinds) {
    CUptiResult r = cuptiActivityEnable(kind);
    // Markers need NVTX injection; a machine without it still traces everything else.
    if (r != CUPTI_SUCCESS && kind != CUPTI_ACTIVITY_KIND_MARKER) {
      undo();
      check(r, "cuptiActivityEnable");
    }
  }
  try {
    if (options_.api == CuptiApiRecords::Activity) enable_api_records();
    if (options_.api == CuptiApiRecords::Callbacks) {
      try {
        subscribe_api_callbacks(c);
      } catch (const Error&) {  // CUPTI has one subscriber per process: another tool may hold it
        unsubscribe_api_callbacks(c);
        options_.api = CuptiApiRecords::Activity;
        enable_api_records();
      }
    }
  } catch (const Error&) {
    undo();
    throw;
  }
  running_ = true;
}

namespace {

// Everything the trace gathered, moved out; the calls the callbacks stamped turned into API records.
void collect(Collector& c, GpuTrace& out) {
  std::lock_guard<std::mutex> lock(c.mu);
  std::lock_guard<std::mutex> api_lock(c.api_mu);
  c.active = false;
  out.records = std::move(c.records);
  c.records.clear();
  // The calls the callbacks stamped, as the records the activity API would have given.
  std::map<std::pair<bool, uint32_t>, std::string> names;
  for (const auto& call : c.api_calls) {
    GpuActivity a;
    a.kind = call.runtime ? GpuActivityKind::Runtime : GpuActivityKind::Driver;
    auto& name = names[{call.runtime, call.cbid}];
    if (name.empty())
      name = api_name(call.runtime ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API, call.cbid);
    a.name = name;
    a.start_ns = static_cast<int64_t>(call.start) + c.offset_ns;
    a.end_ns = static_cast<int64_t>(call.end) + c.offset_ns;
    a.thread = call.thread;
    a.correlation = call.correlation;
    out.records.push_back(std::move(a));
  }
  c.api_calls.clear();
  out.dropped = c.dropped;
}

}  // namespace

GpuTrace CuptiTrace::stop() {
  GpuTrace out;
  if (!running_) return out;
  running_ = false;
  auto& c = collector();
  for (auto kind : kKinds) cuptiActivityDisable(kind);
  if (options_.graph_level) cuptiActivityDisable(CUPTI_ACTIVITY_KIND_GRAPH_TRACE);
  if (options_.api == CuptiApiRecords::Activity) disable_api_records();
  unsubscribe_api_callbacks(c);
  // What CUPTI still holds must reach the buffers before they are flushed (and before a detach).
  static auto sync = driver_fn<CUresult (*)()>("cuCtxSynchronize");
  if (sync) sync();
  CUptiResult r = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  collect(c, out);
  if (r != CUPTI_SUCCESS) {
    const char* text = nullptr;
    cuptiGetResultString(r, &text);
    out.error = std::string("CUPTI: flush failed: ") + (text ? text : "unknown error");
  }
  if (!g_nvtx_at_cupti) cuptiFinalize();  // no lock held: CUPTI may still call back
  return out;
}

CuptiTrace::~CuptiTrace() {
  if (running_) stop();
}

}  // namespace kiln::profile
