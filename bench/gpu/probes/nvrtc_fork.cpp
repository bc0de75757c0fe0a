// Fork cost from a large parent, and (KILN_PROBE_DLMOPEN=1) NVRTC copies in separate link namespaces
// (dlmopen) compiling from threads: that part ran on Debian 12 (glibc 2.36; at most ~6 namespaces fit the
// static TLS) and crashed inside NVRTC on the GPU machine (Ubuntu 24.04, glibc 2.39).
#include <dlfcn.h>
#include <nvrtc.h>
#include <sys/wait.h>
#include <unistd.h>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>
using Clock = std::chrono::steady_clock;
double ms(Clock::time_point a) { return std::chrono::duration<double, std::milli>(Clock::now() - a).count(); }
struct Api {
  void (*ctype_init)() = nullptr;
  decltype(&nvrtcCreateProgram) create; decltype(&nvrtcCompileProgram) compile; decltype(&nvrtcGetCUBINSize) size;
  decltype(&nvrtcDestroyProgram) destroy;
};
Api load(void* h) {
  Api a; a.create = (decltype(a.create))dlsym(h, "nvrtcCreateProgram"); a.compile = (decltype(a.compile))dlsym(h, "nvrtcCompileProgram");
  a.size = (decltype(a.size))dlsym(h, "nvrtcGetCUBINSize"); a.destroy = (decltype(a.destroy))dlsym(h, "nvrtcDestroyProgram"); return a;
}
double comp(const Api& api, const std::string& src) {
  auto t0 = Clock::now();
  const char* o[] = {"--gpu-architecture=sm_90", "--std=c++17", "-default-device", "-lineinfo"};
  nvrtcProgram p; api.create(&p, src.c_str(), "k.cu", 0, nullptr, nullptr);
  if (api.compile(p, 4, o) != NVRTC_SUCCESS) { printf("compile failed\n"); exit(1); }
  size_t sz; api.size(p, &sz); api.destroy(&p);
  return ms(t0);
}
int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IONBF, 0);
  std::vector<std::string> srcs;
  for (int a = 1; a < argc; ++a) { std::ifstream f(argv[a]); std::stringstream ss; ss << f.rdbuf(); srcs.push_back(ss.str()); }
  Api base{nullptr, nvrtcCreateProgram, nvrtcCompileProgram, nvrtcGetCUBINSize, nvrtcDestroyProgram};
  const int N = std::atoi(getenv("N") ? getenv("N") : "64");
  comp(base, srcs[0]);
  { auto t0 = Clock::now(); for (int i = 0; i < N; ++i) comp(base, srcs[i % srcs.size()]); printf("serial: %d units %.0f ms\n", N, ms(t0)); }
  // dlmopen copies, one per thread
  for (int T : {2, 4, 8, 12}) {
    if (!getenv("KILN_PROBE_DLMOPEN")) break;
    std::vector<Api> apis;
    auto tl = Clock::now();
    for (int t = 0; t < T; ++t) {
      void* h = dlmopen(LM_ID_NEWLM, "libnvrtc.so.13", RTLD_NOW | RTLD_LOCAL);
      if (!h) { printf("dlmopen %d failed: %s\n", t, dlerror()); break; }
      apis.push_back(load(h));
      Lmid_t lm; dlinfo(h, RTLD_DI_LMID, &lm);
      void* c = dlmopen(lm, "libc.so.6", RTLD_NOW | RTLD_LOCAL);
      apis.back().ctype_init = c ? (void (*)())dlsym(c, "__ctype_init") : nullptr;
      if (!apis.back().ctype_init) printf("no __ctype_init\n");
    }
    if ((int)apis.size() < T) break;
    double load_ms = ms(tl);
    std::atomic<int> next{0};
    auto t0 = Clock::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < T; ++t) pool.emplace_back([&, t] { if (apis[t].ctype_init) apis[t].ctype_init(); comp(apis[t], srcs[0]); });
    for (auto& t : pool) t.join();
    double warm = ms(t0);
    t0 = Clock::now();
    pool.clear();
    for (int t = 0; t < T; ++t) pool.emplace_back([&, t] { if (apis[t].ctype_init) apis[t].ctype_init(); for (int i; (i = next++) < N;) comp(apis[t], srcs[i % srcs.size()]); });
    for (auto& t : pool) t.join();
    printf("dlmopen x%d: load %.0f ms, first compile %.0f ms, %d units %.0f ms\n", T, load_ms, warm, N, ms(t0));
  }
  // fork cost from a large parent
  for (size_t gb : {0, 2, 6}) {
    size_t n = gb << 30;
    char* big = n ? (char*)malloc(n) : nullptr;
    if (big) memset(big, 1, n);
    auto t0 = Clock::now();
    for (int p = 0; p < 16; ++p) if (fork() == 0) _exit(0);
    double f = ms(t0);
    for (int p = 0; p < 16; ++p) wait(nullptr);
    t0 = Clock::now();
    for (int p = 0; p < 16; ++p) if (fork() == 0) { for (int i = p; i < N; i += 16) comp(base, srcs[i % srcs.size()]); _exit(0); }
    for (int p = 0; p < 16; ++p) wait(nullptr);
    printf("parent with %zu GB touched: 16 forks %.0f ms; 16 processes compile %d units %.0f ms\n", gb, f, N, ms(t0));
    free(big);
  }
}
