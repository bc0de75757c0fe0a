// Kiln's own 16-bit products (runtime/cuda/half_gemm.h) against cuBLAS, per problem: host µs per call (the calls
// queued behind a sleeping kernel: host time only) and device µs per product (20 calls captured in a CUDA graph,
// the graph replayed: no host in it), for LibTorch's mm and for Kiln's kernel, and their agreement. Problems:
// BERT-base's and GPT-2's projections at 8 × 128 and 1 × 128 tokens, both layouts of the second operand (a
// linear's w.t(), GPT-2's Conv1D [k, n]), bfloat16 and float16, each beside its floor (measure_ceilings). What
// default mode's bound (own_product_max_flop) is read from. Below each problem, every candidate kernel's device µs
// (codegen::half_gemm_candidates: tiles and fragment forms) and the fastest, for choosing the used set.
//
//   kiln_product_probe [ITERS=200]
#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kiln_build_config.h"

#if KILN_TORCH_CUDA && KILN_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>

#include "bench/gpu_bench_timing.h"
#include "bench/probe_timing.h"
#include "engine/runtime/cuda/half_gemm.h"

namespace {

using kiln::bench::host_us;

// Device µs per call: 20 calls in one CUDA graph, replayed 10 times per block, median of 5 blocks.
double device_us(const std::function<void()>& fn) {
  fn();
  at::cuda::device_synchronize();
  at::cuda::CUDAStream side = at::cuda::getStreamFromPool();
  at::cuda::CUDAStreamGuard guard(side);
  at::cuda::CUDAGraph graph;
  graph.capture_begin();
  for (int i = 0; i < 20; ++i) fn();
  graph.capture_end();
  std::vector<double> blocks;
  for (int b = 0; b < 5; ++b) {
    graph.replay();
    at::cuda::CUDAEvent start(cudaEventDefault), end(cudaEventDefault);
    start.record(side);
    for (int r = 0; r < 10; ++r) graph.replay();
    end.record(side);
    end.synchronize();
    blocks.push_back(start.elapsed_time(end) * 1000.0 / 200);
  }
  std::sort(blocks.begin(), blocks.end());
  return blocks[blocks.size() / 2];
}

// The device's two ceilings, measured here (16-bit products' rate, memory bandwidth), for each problem's floor: the
// larger of its work over the rate and its fewest bytes (each operand read once, the result written once) over the
// bandwidth. Rate: cuBLAS's 8192^3 product in the type; bandwidth: a 1 GiB device-to-device copy, bytes read plus
// written; each the median of 5 calls timed one by one (gpu_bench_timing.h), after one not timed.
struct Ceilings {
  double flop_per_us = 0, bytes_per_us = 0;
};

Ceilings measure_ceilings(at::ScalarType type) {
  Ceilings c;
  auto opt = at::TensorOptions().dtype(type).device(at::kCUDA);
  const int64_t s = 8192;
  at::Tensor a = at::randn({s, s}, opt), b = at::randn({s, s}, opt), out = at::empty({s, s}, opt);
  auto us = [](const std::function<void()>& fn) {
    fn();
    return kiln::gpu_bench::block_median_ms(fn, 5) * 1000.0;
  };
  c.flop_per_us = 2.0 * s * s * s / us([&] { at::mm_out(out, a, b); });
  const int64_t n = int64_t{1} << 29;  // 1 GiB of 16-bit elements
  at::Tensor src = at::randn({n}, opt), dst = at::empty({n}, opt);
  c.bytes_per_us = 2.0 * 2 * n / us([&] { dst.copy_(src); });
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  const int iters = argc > 1 ? std::max(1, std::atoi(argv[1])) : 200;
  if (!torch::cuda::is_available()) {
    std::fprintf(stderr, "kiln_product_probe: no CUDA device\n");
    return 1;
  }
  c10::InferenceMode im;
  struct Problem {
    const char* what;
    int64_t m, n, k;
  };
  const std::vector<Problem> problems = {
      {"768x768 (attention projections)", 1024, 768, 768},  {"2304x768 (GPT-2 c_attn)", 1024, 2304, 768},
      {"3072x768 (feed-forward up)", 1024, 3072, 768},      {"768x3072 (feed-forward down)", 1024, 768, 3072},
      {"768x768, batch 1", 128, 768, 768},                  {"3072x768, batch 1", 128, 3072, 768},
      {"768x3072, batch 1", 128, 768, 3072},
  };
  const std::vector<kiln::codegen::HalfGemmKernel> candidates[2] = {kiln::codegen::half_gemm_candidates(true),
                                                                     kiln::codegen::half_gemm_candidates(false)};
  std::map<std::string, std::shared_ptr<kiln::runtime::OwnProduct>> candidate_products;
  std::printf("16-bit products, cuBLAS (LibTorch's mm) against Kiln's kernel; µs per call; floor: the larger of the\n"
              "work at the measured product rate and the fewest bytes at the measured bandwidth\n");
  std::printf("%-34s %-6s %-6s %7s | %9s %9s | %9s %9s %9s | %9s\n", "problem (n x k, m rows)", "type", "b", "Gflop",
              "host lib", "host own", "dev lib", "dev own", "floor", "max diff");
  for (bool bf16 : {true, false}) {
    const auto type = bf16 ? at::kBFloat16 : at::kHalf;
    const Ceilings ceil = measure_ceilings(type);
    std::printf("%s ceilings here: %.0f Tflop/s (cuBLAS, 8192^3), %.0f GB/s (1 GiB copy, read + written)\n",
                bf16 ? "bfloat16" : "float16", ceil.flop_per_us / 1e6, ceil.bytes_per_us / 1e3);
    auto own = kiln::runtime::half_gemms(0, bf16);
    for (const auto& k : candidates[bf16 ? 0 : 1])
      candidate_products[kiln::codegen::half_gemm_name(k)] = kiln::runtime::half_gemm_kernel(k);
    for (const auto& p : problems)
      for (bool weight_rows : {true, false}) {
        auto opt = at::TensorOptions().dtype(type).device(at::kCUDA);
        at::Tensor a = at::randn({p.m, p.k}, opt);
        at::Tensor b = weight_rows ? at::randn({p.n, p.k}, opt).t() : at::randn({p.k, p.n}, opt);
        at::Tensor mine = own->mm(a, b), lib = at::mm(a, b);
        if (!mine.defined()) {
          std::printf("%-34s not taken\n", p.what);
          continue;
        }
        const double diff = (mine.to(at::kFloat) - lib.to(at::kFloat)).abs().max().item<double>() /
                            lib.to(at::kFloat).abs().max().item<double>();
        const double gflop = 2.0 * p.m * p.n * p.k / 1e9;
        const double hl = host_us([&] { at::mm(a, b); }, iters), ho = host_us([&] { own->mm(a, b); }, iters);
        const double dl = device_us([&] { at::mm(a, b); }), d_own = device_us([&] { own->mm(a, b); });
        const double floor_us = std::max(2.0 * p.m * p.n * p.k / ceil.flop_per_us,
                                         2.0 * (p.m * p.k + p.k * p.n + p.m * p.n) / ceil.bytes_per_us);
        std::printf("%-34s %-6s %-6s %7.2f | %9.2f %9.2f | %9.2f %9.2f %9.2f | %9.2e\n", p.what, bf16 ? "bf16" : "f16",
                    weight_rows ? "w.t()" : "[k,n]", gflop, hl, ho, dl, d_own, floor_us, diff);
        // Every candidate kernel of this layout (tile, fragment form), device µs each; the fastest named.
        std::string line = "    candidates, device us:";
        double best = 0, worst_diff = 0;
        std::string best_name;
        for (const auto& k : candidates[bf16 ? 0 : 1]) {
          if (k.weight_rows != weight_rows) continue;
          auto& one = *candidate_products[kiln::codegen::half_gemm_name(k)];
          at::Tensor c = one.mm(a, b);
          if (!c.defined()) continue;
          worst_diff = std::max(worst_diff, (c.to(at::kFloat) - lib.to(at::kFloat)).abs().max().item<double>() /
                                                lib.to(at::kFloat).abs().max().item<double>());
          const double us = device_us([&] { one.mm(a, b); });
          const std::string short_name = std::to_string(k.tile.bm) + "x" + std::to_string(k.tile.bn) +
                                         (k.form == kiln::codegen::HalfGemmForm::Ldmatrix ? " ldsm" : "");
          char cell[64];
          std::snprintf(cell, sizeof cell, " %s %.2f,", short_name.c_str(), us);
          line += cell;
          if (best_name.empty() || us < best) {
            best = us;
            best_name = short_name;
          }
        }
        if (!best_name.empty()) line.back() = ';';
        std::printf("%s fastest %s %.2f (cuBLAS %.2f), max diff %.2e\n", line.c_str(), best_name.c_str(), best, dl,
                    worst_diff);
        std::fflush(stdout);
      }
  }
  return 0;
}

#else

int main() {
  std::fprintf(stderr, "kiln_product_probe: built without CUDA\n");
  return 1;
}

#endif
