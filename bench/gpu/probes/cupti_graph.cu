// What CUPTI costs a CUDA graph's replay, by way of recording, and whether graph-level records work when
// enabled after the graph was instantiated (as `kiln profile` starts tracing after compiling): a graph of
// KERNELS small kernels replayed untraced and traced (each replay followed by one kernel launched outside
// the graph), each way in a forked process of its own (a crash inside CUPTI ends that way only). Prints
// one line per way: untraced and traced iteration median, overhead, records by kind (10: kernel,
// 51: graph). "before" ways enable tracing before the graph is instantiated; their untraced figure is
// the "none" line's. "stream" ways launch the same kernels one by one, no graph, and give the host's part too.
#include <cuda_runtime.h>
#include <cupti.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

using Clock = std::chrono::steady_clock;
constexpr int KERNELS = 100;
constexpr int N = 1 << 16;

__global__ void add_one(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * 0.5f + 1.0f;
}

std::map<int, int> g_kinds;
void CUPTIAPI requested(uint8_t** b, size_t* size, size_t* max) {
  *size = 8 << 20;
  *b = static_cast<uint8_t*>(aligned_alloc(8, *size));
  *max = 0;
}
void CUPTIAPI completed(CUcontext, uint32_t, uint8_t* b, size_t, size_t valid) {
  CUpti_Activity* r = nullptr;
  while (valid && cuptiActivityGetNextRecord(b, valid, &r) == CUPTI_SUCCESS) ++g_kinds[r->kind];
  free(b);
}

cudaGraphExec_t make_graph(float* x, cudaStream_t s) {
  cudaGraph_t g;
  cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
  for (int k = 0; k < KERNELS; ++k) add_one<<<(N + 255) / 256, 256, 0, s>>>(x, N);
  cudaStreamEndCapture(s, &g);
  cudaGraphExec_t e;
  cudaGraphInstantiate(&e, g, 0);
  return e;
}

double median_replay_ms(cudaGraphExec_t e, float* x, cudaStream_t s, int iters) {
  std::vector<double> t;
  for (int i = 0; i < iters; ++i) {
    auto a = Clock::now();
    cudaGraphLaunch(e, s);
    add_one<<<(N + 255) / 256, 256, 0, s>>>(x, N);
    cudaStreamSynchronize(s);
    t.push_back(std::chrono::duration<double, std::milli>(Clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// The same KERNELS launched one by one on the stream (as Kiln's default mode does), timed whole and for the
// host's part alone (until the last launch returned): the median of each.
std::pair<double, double> median_stream_ms(float* x, cudaStream_t s, int iters) {
  std::vector<double> t, host;
  for (int i = 0; i < iters; ++i) {
    auto a = Clock::now();
    for (int k = 0; k < KERNELS; ++k) add_one<<<(N + 255) / 256, 256, 0, s>>>(x, N);
    host.push_back(std::chrono::duration<double, std::milli>(Clock::now() - a).count());
    cudaStreamSynchronize(s);
    t.push_back(std::chrono::duration<double, std::milli>(Clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  std::sort(host.begin(), host.end());
  return {t[t.size() / 2], host[host.size() / 2]};
}

void enable(const std::string& way) {
  cuptiActivityRegisterCallbacks(requested, completed);
  CUptiResult r = CUPTI_SUCCESS;
  // Graph-level records first, as the engine enables them.
  if (way.find("graph") != std::string::npos) r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_GRAPH_TRACE);
  if (r == CUPTI_SUCCESS && way.find("kernel") != std::string::npos) r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (r != CUPTI_SUCCESS) {
    const char* text = nullptr;
    cuptiGetResultString(r, &text);
    std::printf("%-40s enable failed: %s\n", way.c_str(), text ? text : "?");
    std::fflush(stdout);
    _exit(1);
  }
}

void CUPTIAPI on_call(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

// CUPTI's callback API on every runtime and driver call (kiln profile subscribes to the launching ones).
void subscribe() {
  CUpti_SubscriberHandle sub = nullptr;
  cuptiSubscribe(&sub, on_call, nullptr);
  cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_DRIVER_API);
  cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API);
}

// way: "none", "kernel after", "graph after", "kernel before", "graph before"; "callbacks" adds the
// callback API; "again": an untraced figure first, then a whole kernel-record session ended by
// cuptiFinalize, then the graph made again under the way's records (as kiln profile's runs follow one another).
void run(const std::string& way) {
  float* x = nullptr;
  cudaMalloc(&x, N * sizeof(float));
  cudaMemset(x, 0, N * sizeof(float));
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  if (way.rfind("stream", 0) == 0) {
    // Launches outside any graph: untraced, then traced the way named after "stream".
    for (int i = 0; i < 20; ++i) median_stream_ms(x, s, 1);
    auto plain = median_stream_ms(x, s, 400);
    if (way.find("callbacks") != std::string::npos) subscribe();
    enable(way);
    median_stream_ms(x, s, 5);
    auto traced = median_stream_ms(x, s, 400);
    cudaDeviceSynchronize();
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    std::string kinds;
    for (auto [k, n] : g_kinds) kinds += " kind" + std::to_string(k) + "=" + std::to_string(n);
    std::printf("%-30s untraced %.4f ms (host %.4f)  traced %.4f ms (host %.4f)  overhead %+.1f %%  records:%s\n",
                way.c_str(), plain.first, plain.second, traced.first, traced.second, (traced.first / plain.first - 1) * 100,
                kinds.c_str());
    std::fflush(stdout);
    return;
  }
  bool before = way.find("before") != std::string::npos;
  if (before && way.find("callbacks") != std::string::npos) subscribe();
  if (before) enable(way);
  cudaGraphExec_t e = make_graph(x, s);
  for (int i = 0; i < 20; ++i) cudaGraphLaunch(e, s);
  cudaStreamSynchronize(s);
  double plain = 0, traced = 0;
  if (way.find("again") != std::string::npos) {
    plain = median_replay_ms(e, x, s, 400);
    enable("kernel");
    median_replay_ms(e, x, s, 20);
    cudaDeviceSynchronize();
    cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    cuptiFinalize();
    g_kinds.clear();
    cudaGraphExecDestroy(e);
    if (way.find("callbacks") != std::string::npos) subscribe();
    enable(way);
    e = make_graph(x, s);
    median_replay_ms(e, x, s, 5);
    traced = median_replay_ms(e, x, s, 400);
  } else if (before) {
    // Tracing is on from the start: the untraced figure is another process's ("none").
    traced = median_replay_ms(e, x, s, 400);
  } else {
    plain = median_replay_ms(e, x, s, 400);
    if (way != "none") enable(way);
    traced = median_replay_ms(e, x, s, 400);
  }
  cudaDeviceSynchronize();
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::string kinds;
  for (auto [k, n] : g_kinds) kinds += " kind" + std::to_string(k) + "=" + std::to_string(n);
  std::printf("%-30s untraced %.4f ms  traced %.4f ms  overhead %+.1f %%  records:%s\n", way.c_str(), plain, traced,
              plain > 0 ? (traced / plain - 1) * 100 : 0.0, kinds.c_str());
  std::fflush(stdout);
}

int main() {
  for (const char* way : {"none", "kernel after", "graph after", "kernel before", "graph before", "graph kernel before",
                          "graph kernel callbacks before", "again graph", "again graph kernel",
                          "again graph kernel callbacks", "none", "stream kernel", "stream kernel callbacks",
                          "stream callbacks"}) {
    std::fflush(stdout);
    pid_t p = fork();
    if (p == 0) {
      run(way);
      _exit(0);
    }
    int st = 0;
    waitpid(p, &st, 0);
    if (!WIFEXITED(st)) std::printf("%-30s died (signal %d)\n", way, WIFSIGNALED(st) ? WTERMSIG(st) : 0);
  }
}
