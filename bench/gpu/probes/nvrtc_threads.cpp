// NVRTC throughput by thread and process count: N units (the given sources, cycled) compiled by T threads
// or P forked processes; prints the wall time and the mean time per unit.
#include <nvrtc.h>
#include <sys/wait.h>
#include <unistd.h>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>
using Clock = std::chrono::steady_clock;
double ms(Clock::time_point a) { return std::chrono::duration<double, std::milli>(Clock::now() - a).count(); }
std::vector<std::string> opts_s = {"--gpu-architecture=sm_90", "--std=c++17", "-default-device", "-lineinfo"};
double comp(const std::string& src) {
  auto t0 = Clock::now();
  std::vector<const char*> o;
  for (auto& s : opts_s) o.push_back(s.c_str());
  nvrtcProgram p;
  nvrtcCreateProgram(&p, src.c_str(), "k.cu", 0, nullptr, nullptr);
  if (nvrtcCompileProgram(p, o.size(), o.data()) != NVRTC_SUCCESS) { printf("compile failed\n"); exit(1); }
  size_t sz; nvrtcGetCUBINSize(p, &sz);
  nvrtcDestroyProgram(&p);
  return ms(t0);
}
int main(int argc, char** argv) {
  std::vector<std::string> srcs;
  for (int a = 1; a < argc; ++a) { std::ifstream f(argv[a]); std::stringstream ss; ss << f.rdbuf(); srcs.push_back(ss.str()); }
  const int N = 64;
  comp(srcs[0]);
  for (int T : {1, 2, 4, 8, 16}) {
    std::atomic<int> next{0};
    std::atomic<long> total_us{0};
    auto t0 = Clock::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < T; ++t) pool.emplace_back([&] { for (int i; (i = next++) < N;) total_us += long(comp(srcs[i % srcs.size()]) * 1000); });
    for (auto& t : pool) t.join();
    printf("threads %2d: %d units in %.0f ms, %.0f ms per unit\n", T, N, ms(t0), total_us / 1000.0 / N);
  }
  for (int P : {4, 8, 16}) {
    auto t0 = Clock::now();
    for (int p = 0; p < P; ++p)
      if (fork() == 0) { for (int i = p; i < N; i += P) comp(srcs[i % srcs.size()]); _exit(0); }
    for (int p = 0; p < P; ++p) wait(nullptr);
    printf("processes %2d: %d units in %.0f ms\n", P, N, ms(t0));
  }
}
