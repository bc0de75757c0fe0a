#include "engine/runtime/cuda/cuda_graph_fn.h"

#include <atomic>
#include <mutex>

#include "engine/base/error.h"
#include "engine/runtime/memory_tracker.h"

#if KILN_TORCH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAException.h>
#include <cuda_runtime_api.h>
#include <c10/cuda/CUDAGuard.h>
#endif

namespace kiln::runtime {

namespace {

std::atomic<int64_t> g_live_graphs{0};

class TraceFn : public CompiledFn {
 public:
  explicit TraceFn(const capture::SpecializedRegion& e) : entry_(e) {}
  void run(capture::Interpreter& interp, capture::Interpreter::Env& env) override { capture::run_trace(entry_, interp, env); }

 private:
  capture::SpecializedRegion entry_;
};

#if KILN_TORCH_CUDA

// One pool per region, for all its entries' graphs: each entry's callable holds the region's
// pool, and the process-wide table only refers to it. When a region's last callable goes, so does
// its pool id: a region made later at the same address gets a fresh pool, never one whose graphs
// the caching allocator has already released (reusing that id fails its use-count assertion).
struct RegionPool {
  c10::cuda::MempoolId_t id = at::cuda::graph_pool_handle();
};
std::shared_ptr<RegionPool> region_pool(const void* region_key) {
  static std::mutex mutex;
  static std::map<const void*, std::weak_ptr<RegionPool>> pools;
  std::lock_guard<std::mutex> lock(mutex);
  for (auto it = pools.begin(); it != pools.end();) it = it->second.expired() ? pools.erase(it) : std::next(it);
  auto& slot = pools[region_key];
  auto pool = slot.lock();
  if (!pool) {
    pool = std::make_shared<RegionPool>();
    slot = pool;
  }
  return pool;
}

// One side stream per device for every capture: cuBLAS keeps a workspace per (handle, stream), and
// one made while capturing stays in the capturing pool; a fresh pool stream per capture (they
// rotate through 32) left a 32 MiB workspace behind for each of them.
c10::cuda::CUDAStream capture_stream() {
  static std::mutex mutex;
  static std::map<c10::DeviceIndex, c10::cuda::CUDAStream> streams;
  std::lock_guard<std::mutex> lock(mutex);
  const auto device = c10::cuda::current_device();
  auto it = streams.find(device);
  if (it == streams.end()) it = streams.emplace(device, at::cuda::getStreamFromPool(false, device)).first;
  return it->second;
}

// The caller's stream waits for what ran on the side stream, also when it threw. Never throws: a destructor
// that throws while an exception unwinds ends the process (a capture left open made block() fail that way).
struct JoinStreams {
  c10::cuda::CUDAStream side, main;
  ~JoinStreams() {
    try {
      at::cuda::CUDAEvent done;
      done.record(side);
      done.block(main);
    } catch (...) {
      (void)cudaGetLastError();  // the error the caller's exception already reports
    }
  }
};

class CudaGraphFn : public CompiledFn {
 public:
  CudaGraphFn(std::unique_ptr<CompiledFn> inner, std::vector<const torch::jit::Value*> inputs,
              std::vector<const torch::jit::Value*> outputs, std::shared_ptr<RegionPool> pool)
      : inner_(std::move(inner)), inputs_(std::move(inputs)), outputs_(std::move(outputs)), pool_(std::move(pool)) {}
  ~CudaGraphFn() override { g_live_graphs -= static_cast<int64_t>(graphs_.size()); }

  void run(capture::Interpreter& interp, capture::Interpreter::Env& env) override {
    std::vector<c10::IValue> in;
    in.reserve(inputs_.size());
    // The graph's key: each tensor's rank, sizes and strides as raw integers (every call builds it:
    // no text formatting), each other input's text (scalars are baked into the captured launches).
    std::string key;
    auto put = [&key](int64_t v) { key.append(reinterpret_cast<const char*>(&v), sizeof v); };
    bool cpu = false;
    for (const auto* v : inputs_) {
      in.push_back(capture::lookup(env, v));
      if (in.back().isTensor()) {
        const auto& t = in.back().toTensor();
        cpu |= !t.is_cuda();
        put(t.dim());
        for (int64_t d : t.sizes()) put(d);
        for (int64_t d : t.strides()) put(d);
      } else {
        put(-1);
        key += c10::str(in.back()) + ";";
      }
    }
    if (cpu) {
      log_.push_back("skipped: region has CPU tensors; ran without a CUDA graph");
      inner_->run(interp, env);
      return;
    }
    auto it = graphs_.find(key);
    if (it == graphs_.end() && graphs_.size() >= kMaxGraphs) {
      // Bounded: the graph used longest ago goes; its memory stays in the region's pool for the next.
      auto oldest = graphs_.begin();
      for (auto g = graphs_.begin(); g != graphs_.end(); ++g)
        if (g->second.last_use < oldest->second.last_use) oldest = g;
      graphs_.erase(oldest);
      --g_live_graphs;
      log_.push_back("dropped the CUDA graph used longest ago (" + std::to_string(kMaxGraphs) +
                     " input shapes kept per region)");
    }
    if (it == graphs_.end()) {
      // Warm up outside capture (allocations, autotuning, lazy module loads), then record, both on
      // the capture stream: its cuBLAS workspace is made by the warm-up, outside the graph's pool.
      Recorded rec;
      {
        MemoryOwner owner("CUDA graph static inputs");
        for (const auto& iv : in) rec.static_inputs.push_back(iv.isTensor() ? c10::IValue(iv.toTensor().clone()) : iv);
      }
      on_capture_stream([&] {
        inner_->run(interp, env);
        for (size_t i = 0; i < inputs_.size(); ++i) env[inputs_[i]] = rec.static_inputs[i];
        rec.graph = std::make_unique<at::cuda::CUDAGraph>();
        // Every graph of the region allocates from one pool (PyTorch's graph pools): a region runs
        // one of its graphs at a time and its outputs are valid until its next call, so a graph
        // may reuse the memory another freed during its capture; re-recording for new shapes
        // grows the pool to the largest graph's needs, not the sum.
        MemoryOwner owner("CUDA graph pool (its buffers and outputs)");
        rec.graph->capture_begin(pool_->id);
        try {
          inner_->run(interp, env);
        } catch (const std::exception& e) {
          // The capture is ended before the error leaves (left open, the stream stays in capture mode and
          // the next call on it fails); what it recorded is dropped. The next call records again.
          try {
            rec.graph->capture_end();
          } catch (...) {
            (void)cudaGetLastError();
          }
          // Its graph dies with rec; were it the pool's only graph, the pool could not be captured into again
          // (LibTorch's use-count assertion, as in record_graphs_again): the next recording takes a fresh one.
          if (graphs_.empty()) pool_ = std::make_shared<RegionPool>();
          throw Error(std::string("recording a CUDA graph failed: ") + e.what());
        }
        rec.graph->capture_end();
        for (const auto* v : outputs_) rec.static_outputs.push_back(capture::lookup(env, v));
      });
      const char* why = !graphs_.empty() ? "new input shapes" : dropped_ ? "again, for a profiler" : "first call";
      log_.push_back(std::string("recorded a CUDA graph (") + why + ")");
      it = graphs_.emplace(key, std::move(rec)).first;
      ++g_live_graphs;
    }
    auto& rec = it->second;
    rec.last_use = ++clock_;
    for (size_t i = 0; i < inputs_.size(); ++i) {
      if (!in[i].isTensor()) continue;
      const auto& t = in[i].toTensor();
      auto& s = rec.static_inputs[i].toTensor();
      if (t.data_ptr() == s.data_ptr()) continue;
      // The same sizes and strides (the key), dtype and device: dense ones are one device-to-device
      // copy on the stream the graph replays on, without a copy kernel's dispatch.
      if (t.scalar_type() == s.scalar_type() && t.device() == s.device() && t.is_contiguous() && s.is_contiguous()) {
        C10_CUDA_CHECK(cudaMemcpyAsync(s.data_ptr(), t.data_ptr(), t.nbytes(), cudaMemcpyDeviceToDevice,
                                       at::cuda::getCurrentCUDAStream()));
      } else {
        s.copy_(t, /*non_blocking=*/true);
      }
    }
    rec.graph->replay();
    for (size_t i = 0; i < outputs_.size(); ++i) env[outputs_[i]] = rec.static_outputs[i];
    for (size_t i = 0; i < inputs_.size(); ++i) env[inputs_[i]] = in[i];
    ++replays_;
    if (replays_ <= 3 || replays_ % 100 == 0) log_.push_back("replayed the CUDA graph (replay " + std::to_string(replays_) + ")");
  }

  std::vector<std::string> take_log() override {
    auto out = std::move(log_);
    log_.clear();
    return out;
  }
  std::vector<std::vector<records::AutotuneCandidate>> autotune() const override { return inner_->autotune(); }
  bool record_graphs_again() override {
    if (graphs_.empty()) return false;
    g_live_graphs -= static_cast<int64_t>(graphs_.size());
    graphs_.clear();
    // A fresh pool for the graphs recorded next: with its last graph gone the old pool may be released
    // while the caller still holds outputs in it, and capturing into it again fails LibTorch's
    // use-count assertion (seen on the H200: "create_or_incref_pool ... use_count > 0").
    pool_ = std::make_shared<RegionPool>();
    dropped_ = true;
    log_.push_back("dropped its CUDA graphs to record them again (a profiler asked)");
    return true;
  }

 private:
  struct Recorded {
    std::unique_ptr<at::cuda::CUDAGraph> graph;
    std::vector<c10::IValue> static_inputs;
    std::vector<c10::IValue> static_outputs;
    uint64_t last_use = 0;
  };
  static constexpr size_t kMaxGraphs = 16;
  std::unique_ptr<CompiledFn> inner_;
  std::vector<const torch::jit::Value*> inputs_, outputs_;
  // Declared before the graphs: they are destroyed first, releasing the pool they allocate from.
  std::shared_ptr<RegionPool> pool_;
  std::map<std::string, Recorded> graphs_;
  std::vector<std::string> log_;
  int64_t replays_ = 0;
  uint64_t clock_ = 0;
  bool dropped_ = false;  // record_graphs_again() ran
};

#endif

}  // namespace

void on_capture_stream(const std::function<void()>& f) {
#if KILN_TORCH_CUDA
  auto side = capture_stream();
  auto main = at::cuda::getCurrentCUDAStream();
  at::cuda::CUDAEvent ready;
  ready.record(main);
  ready.block(side);
  JoinStreams join{side, main};
  c10::cuda::CUDAStreamGuard guard(side);
  f();
#else
  f();
#endif
}

std::unique_ptr<CompiledFn> make_trace_fn(const capture::SpecializedRegion& entry) { return std::make_unique<TraceFn>(entry); }

int64_t live_cuda_graphs() { return g_live_graphs.load(); }

std::unique_ptr<CompiledFn> make_cuda_graph_fn(std::unique_ptr<CompiledFn> inner,
                                               std::vector<const torch::jit::Value*> inputs,
                                               std::vector<const torch::jit::Value*> outputs, const void* region_key) {
#if KILN_TORCH_CUDA
  return std::make_unique<CudaGraphFn>(std::move(inner), std::move(inputs), std::move(outputs),
                                       region_pool(region_key));
#else
  (void)inner;
  (void)inputs;
  (void)outputs;
  (void)region_key;
  throw Error("CUDA graphs need a LibTorch built with CUDA (this one is CPU only)");
#endif
}

}  // namespace kiln::runtime
