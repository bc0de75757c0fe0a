// The fair GPU benchmark's C++ side (the lent H100): one model per process, measured in the same
// machine call as its peers (bench/gpu/peer_bench.py wrote DIR/NAME.pt, DIR/NAME.peer.json and
// DIR/NAME.aoti.pt2 just before):
//
//   kiln_gpu_bench DIR NAME OUT.json      LibTorch eager, Kiln default / reduce-overhead / max-autotune and
//     AOTInductor's package run from C++, each: per-call time (CUDA events around one call, synchronized, after
//     10 warm-up calls: the median of three blocks' medians of 100, the method the Python peers use), device
//     time per iteration (sum of kernel, memcpy and memset durations from CUPTI over 20 iterations), error
//     against eager under Kiln's tolerance rule; Kiln's cold (empty kernel cache) and warm (disk cache hit)
//     compile; and what CUPTI tracing adds to Kiln's per-call median (cupti_overhead: paired, traced / untraced - 1)
//   kiln_gpu_bench DIR NAME OUT.json --cold MODE
//                                        one mode's cold compile alone in this fresh process, after one eager
//                                        call (bench/gpu/peer_bench.py cold does the same for Inductor)
//   kiln_gpu_bench DIR bandwidth OUT.json the pointwise chain's achieved bandwidth at 1e8 elements against a
//                                        device-to-device copy (DIR/pointwise_1e4.pt, DIR/affine.pt)
//
// The float32 matmul precision and cuDNN's TF32 setting are read from the peer's JSON and applied
// here, so both sides compute at the same precision. bench/gpu/fair_table.py prints the tables.
#include <torch/script.h>

#include <execinfo.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/backends/builtin.h"
#include "engine/base/error.h"
#include "engine/base/output_file.h"
#include "engine/commands/profile_window.h"
#include "engine/model/model_impl.h"
#include "engine/runtime/captured_runtime.h"
#include "engine/runtime/compare_values.h"
#include "engine/runtime/cuda/cuda_graph_fn.h"
#include "engine/runtime/example_inputs.h"
#include "engine/runtime/float_precision.h"
#include "engine/runtime/inference_guard.h"
#include "engine/runtime/lt_gemm.h"
#include "engine/runtime/memory_tracker.h"
#if KILN_TORCH_CUDA
#include <ATen/Context.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>

#include "engine/profile/cuda/cupti_trace.h"
#include "engine/profile/host_trace.h"
#include "engine/runtime/cuda/cuda_driver.h"
#include "bench/gpu_bench_timing.h"
#include "bench/gpu_bench_trace.h"
#if __has_include(<torch/csrc/inductor/aoti_package/model_package_loader.h>)
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#define KILN_HAVE_AOTI 1
#endif
#endif

using namespace kiln;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

#if KILN_TORCH_CUDA
namespace {

using namespace kiln::gpu_bench;

void on_crash(int sig) {
  void* frames[64];
  int n = ::backtrace(frames, 64);
  const char msg[] = "kiln_gpu_bench: crashed; backtrace:\n";
  [[maybe_unused]] ssize_t written = ::write(2, msg, sizeof msg - 1);  // nothing to do if it fails
  ::backtrace_symbols_fd(frames, n, 2);
  ::_exit(128 + sig);
}

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

c10::IValue first_output(const std::vector<c10::IValue>& outs) { return outs.empty() ? c10::IValue() : outs[0]; }

json error_of(const c10::IValue& out, const c10::IValue& ref, bool tf32) {
  auto e = runtime::compare_to_eager(out, ref, tf32);
  return {{"rel_err", e.max_rel}, {"ok", e.ok}, {"problem", e.problem}};
}

// A cold compile: a runtime made with an empty kernel cache (KILN_CACHE_DIR, set by the caller) and its
// first call, synchronized; what it cost and where it went.
json cold_compile(const model::Model& m, const std::vector<at::Tensor>& x, const capture::CompileOptions& o) {
  json c;
  std::ostringstream printed;
  auto t0 = Clock::now();
  std::vector<profile::HostSpan> cold_spans;
  auto cold = std::make_unique<runtime::CapturedRuntime>(m, o);
  {
    profile::HostTrace trace;  // the first call's spans: which externs' first calls cost what
    cold->run(x, &printed);
    c10::cuda::device_synchronize();
    cold_spans = trace.spans();
  }
  c["cold_s"] = seconds_since(t0);
  std::map<std::string, double> extern_first;  // extern op -> ms over its first calls
  for (const auto& s : cold_spans)
    if (s.category == "extern") extern_first[s.name] += s.dur_ns / 1e6;
  std::vector<std::pair<double, std::string>> slowest;
  double extern_ms = 0;
  for (const auto& [name, ms] : extern_first) slowest.push_back({ms, name}), extern_ms += ms;
  std::sort(slowest.rbegin(), slowest.rend());
  if (slowest.size() > 5) slowest.resize(5);
  c["cold_extern_ms"] = extern_ms;
  c["cold_extern_slowest"] = slowest;
  // Where the cold compile went: each stage summed over regions (capture, lower, ..., compile = NVRTC's
  // units, load), the kernels and compiler runs; what no stage holds is the first call itself (cuDNN's and
  // cuBLAS's first calls, conv weight copies, tuning in max-autotune).
  std::map<std::string, double> stages;
  int cold_kernels = 0, invocations = 0, assembled = 0;
  std::vector<double> unit_ms;
  for (const auto& info : cold->regions()) {
    const auto& arts = cold->artifacts(info.index);
    for (size_t k = 0; k < info.entries.size() && k < arts.size(); ++k) {
      stages["capture"] += info.entries[k].compile_ms;
      for (const auto& [stage, ms] : arts[k].stage_ms) stages[stage] += ms;
      cold_kernels += static_cast<int>(arts[k].kernels.size());
      invocations += arts[k].compiler_invocations;
      assembled += arts[k].compile_assembled;
      unit_ms.insert(unit_ms.end(), arts[k].compile_unit_ms.begin(), arts[k].compile_unit_ms.end());
    }
  }
  c["cold_stages_ms"] = stages;
  c["cold_kernels"] = cold_kernels;
  c["cold_compiler_runs"] = invocations;
  c["cold_units_assembled"] = assembled;  // of those runs, units assembled from a same-code unit's PTX
  std::sort(unit_ms.rbegin(), unit_ms.rend());
  double unit_sum = 0;
  for (double v : unit_ms) unit_sum += v;
  c["cold_unit_ms"] = {{"sum", unit_sum}, {"slowest", std::vector<double>(unit_ms.begin(), unit_ms.begin() + std::min<size_t>(5, unit_ms.size()))},
                       {"median", unit_ms.empty() ? 0.0 : unit_ms[unit_ms.size() / 2]}};
  return c;
}

// `mode` may name compile choices after an @, joined by +: a convolution layout ("default@contiguous"), where
// linears add their bias ("default@bias=epilogue"), whether conv weights are kept channels-last
// ("reduce-overhead@weights=per-call"), row kernels take in their stages ("default@rows=separate") and attention
// is one call ("default@attention=separate"), depthwise convolutions are generated ("default@depthwise=extern"),
// long reductions over few rows are split ("reduce-overhead@split=off"), max_pool2d is a window of taps
// ("reduce-overhead@pool=off"), attention's kernel is the memory-efficient one where PyTorch would pick cuDNN's
// ("reduce-overhead@sdpa=efficient": KILN_ATTENTION_EFFICIENT=1 while the variant runs) or PyTorch's pick in every
// mode ("default@sdpa=cudnn": =0), who computes 16-bit products ("default@products=library", runtime/cuda/half_gemm.h):
// A/B runs.
json run_kiln(const model::Model& m, const std::vector<at::Tensor>& x, const c10::IValue& ref, bool tf32,
              std::string mode, const std::string& cache_root, const std::function<void()>& eager) {
  json r;
  std::string layout = "auto", linear_bias = "auto", conv_weights = "auto", row_stages = "auto", attention = "auto",
              depthwise = "auto", split_reductions = "auto", pool_windows = "auto", products = "auto";
  const char* sdpa = nullptr;  // KILN_ATTENTION_EFFICIENT while the variant runs
  const bool variant = mode.find('@') != std::string::npos;
  if (auto at = mode.find('@'); at != std::string::npos) {
    std::stringstream choices(mode.substr(at + 1));
    for (std::string c; std::getline(choices, c, '+');)
      if (c.rfind("bias=", 0) == 0) linear_bias = c.substr(5);
      else if (c.rfind("weights=", 0) == 0) conv_weights = c.substr(8);
      else if (c.rfind("rows=", 0) == 0) row_stages = c.substr(5);
      else if (c.rfind("attention=", 0) == 0) attention = c.substr(10);
      else if (c.rfind("depthwise=", 0) == 0) depthwise = c.substr(10);
      else if (c.rfind("split=", 0) == 0) split_reductions = c.substr(6);
      else if (c.rfind("pool=", 0) == 0) pool_windows = c.substr(5);
      else if (c.rfind("products=", 0) == 0) products = c.substr(9);
      else if (c == "sdpa=efficient" || c == "sdpa=cudnn") sdpa = c == "sdpa=efficient" ? "1" : "0";
      else layout = c;
    mode = mode.substr(0, at);
  }
  struct EnvFor {  // set for this run only
    const char* value;
    explicit EnvFor(const char* v) : value(v) {
      if (value) ::setenv("KILN_ATTENTION_EFFICIENT", value, 1);
    }
    ~EnvFor() {
      if (value) ::unsetenv("KILN_ATTENTION_EFFICIENT");
    }
  } efficient_for_run(sdpa);
  try {
    fresh_workspaces();
    step("kiln " + mode + ": cold compile");
    std::string cache = cache_root + "/" + mode;
    ::setenv("KILN_CACHE_DIR", cache.c_str(), 1);
    capture::CompileOptions o;
    o.backend = "kiln";
    o.mode = mode;
    o.conv_layout = layout;
    o.linear_bias = linear_bias;
    o.conv_weights = conv_weights;
    o.row_stages = row_stages;
    o.attention = attention;
    o.depthwise = depthwise;
    o.split_reductions = split_reductions;
    o.pool_windows = pool_windows;
    o.products = products;
    std::ostringstream printed;
    r.update(cold_compile(m, x, o));
    step("kiln " + mode + ": warm compile");
    auto t1 = Clock::now();
    runtime::CapturedRuntime warm(m, o);
    auto out = first_output(warm.run(x, &printed));
    c10::cuda::device_synchronize();
    r["warm_s"] = seconds_since(t1);
    r.update(error_of(out, ref, tf32));
    step("kiln " + mode + ": steady state");
    auto call = [&] { warm.run(x, &printed); };
    double spread = 0;
    r["ms"] = steady_ms(call, 100, &spread);
    r["spread"] = spread;
    r["peak_mib"] = peak_mib(call);
    r["paired"] = paired_with_eager(eager, call);
    // Eager against itself, the same way, with this Kiln runtime alive: what the pairing alone does to eager.
    if (mode == "default" && !variant) r["paired_eager_aa"] = paired_with_eager(eager, eager);
    json kernels;
    r["device_ms"] = device_ms(call, 20, &kernels);
    r["kernels"] = kernels;
    if (!variant && mode != "max-autotune")
      r["cupti"] = cupti_overhead(call, [&] { return warm.record_graphs_again(); });
    if (mode == "default") {
      if (!variant && !env_set("KILN_BENCH_NO_CUPTI_WAYS")) r["window_parts"] = window_parts(call);
      r["host"] = host_breakdown(call);
    }
    // max-autotune: each tuned kernel's race (config, device ms on its first call; the kept one first), to set
    // beside the same kernel's device time inside the timed calls.
    json tuned;
    for (const auto& info : warm.regions())
      for (const auto& a : warm.artifacts(info.index)) {
        if (!a.note.empty()) r["note"] = a.note;
        for (const auto& k : a.kernels) {
          if (k.autotune.empty()) continue;
          json rows = json::array();
          for (const auto& c : k.autotune)
            if (c.chosen) rows.insert(rows.begin(), json::array({c.config, c.ms}));
            else rows.push_back(json::array({c.config, c.ms}));
          tuned[k.name] = rows;
        }
      }
    if (!tuned.empty()) r["tuned"] = tuned;
  } catch (const std::exception& e) {
    r["error"] = std::string(e.what()).substr(0, 400);
  }
  return r;
}

json run_aoti(const std::string& package, const std::vector<at::Tensor>& x, const c10::IValue& ref, bool tf32) {
  json r;
  if (!std::filesystem::exists(package)) {
    r["error"] = "no package (see the peer's .aoti.json)";
    return r;
  }
#if KILN_HAVE_AOTI
  try {
    step("AOTInductor: load " + package);
    auto t0 = Clock::now();
    torch::inductor::AOTIModelPackageLoader loader(package);
    r["load_s"] = seconds_since(t0);
    auto outs = loader.run(x);
    c10::cuda::device_synchronize();
    if (outs.empty()) throw Error("the package returned no outputs");
    r.update(error_of(outs[0], ref, tf32));
    auto call = [&] { loader.run(x); };
    double spread = 0;
    r["ms"] = steady_ms(call, 100, &spread);
    r["spread"] = spread;
    fresh_workspaces();
    r["peak_mib"] = peak_mib(call);
    json kernels;
    r["device_ms"] = device_ms(call, 20, &kernels);
    r["kernels"] = kernels;
  } catch (const std::exception& e) {
    r["error"] = std::string(e.what()).substr(0, 400);
  }
#else
  r["error"] = "this LibTorch has no AOTInductor package loader";
#endif
  return r;
}

// Kiln default against AOTInductor's package, paired in one process: both alive, rounds alternating a block
// of calls of each (paired_with_eager's method), so the host's drift between measurements — per-call default
// mode is host-bound, and this machine's host moves its medians by tens of percent between blocks — reaches
// both alike. Once under no-grad and once under InferenceMode (inference_guard.h: KILN_INFERENCE_MODE picks
// Kiln's guard; AOTI gets the same guard around its call), each with a Kiln runtime of its own, first run
// under that guard; and Kiln under one guard against Kiln under the other, the A/B of the guard itself.
json default_against_aoti(const std::string& package, const model::Model& m, const std::vector<at::Tensor>& x,
                          const std::string& cache_root) {
  json r;
#if KILN_HAVE_AOTI
  if (!std::filesystem::exists(package)) return r;
  try {
    step("paired: Kiln default against AOTInductor");
    ::setenv("KILN_CACHE_DIR", (cache_root + "/default").c_str(), 1);  // run_kiln's default compile: a warm hit
    capture::CompileOptions o;
    o.backend = "kiln";
    o.mode = "default";
    torch::inductor::AOTIModelPackageLoader loader(package);
    std::ostringstream printed;
    auto under = [&](bool inference, const std::function<void()>& fn) {
      ::setenv("KILN_INFERENCE_MODE", inference ? "1" : "0", 1);
      if (inference) {
        c10::InferenceMode guard;
        fn();
      } else {
        c10::InferenceMode off(false);
        torch::NoGradGuard no_grad;
        fn();
      }
    };
    std::map<bool, std::unique_ptr<runtime::CapturedRuntime>> kiln;
    for (bool inference : {false, true}) {
      kiln[inference] = std::make_unique<runtime::CapturedRuntime>(m, o);
      under(inference, [&] { kiln[inference]->run(x, &printed); });
    }
    auto kiln_call = [&](bool inference) { return [&, inference] { under(inference, [&] { kiln[inference]->run(x, &printed); }); }; };
    auto aoti_call = [&](bool inference) { return [&, inference] { under(inference, [&] { loader.run(x); }); }; };
    for (bool inference : {false, true}) {
      // paired_with_eager's "speedup" is first / second: AOTI / Kiln; the table prints Kiln / AOTI.
      json p = paired_with_eager(aoti_call(inference), kiln_call(inference));
      r[inference ? "inference_mode" : "no_grad"] = {{"default_over_aoti", 1.0 / p["speedup"].get<double>()},
                                                     {"kiln_ms", p["kiln_ms"]}, {"aoti_ms", p["eager_ms"]},
                                                     {"rounds", p["rounds"]}, {"calls_per_block", p["calls_per_block"]}};
    }
    // Kiln under no-grad with a switch off against on: externs through the interpreter / directly (direct_extern.h),
    // products through LibTorch / cuBLASLt directly (lt_gemm.h), attention's backend picked each call / once.
    auto switched = [&](const char* var) {
      auto with = [&, var](const char* v) {
        return [&, var, v] { ::setenv(var, v, 1); under(false, [&] { kiln[false]->run(x, &printed); }); };
      };
      const uint64_t lt_before = runtime::lt_gemm_calls();
      json p = paired_with_eager(with("0"), with("1"));
      ::unsetenv(var);
      return json{{"off_over_on", p["speedup"]}, {"off_ms", p["eager_ms"]}, {"on_ms", p["kiln_ms"]},
                  {"cublaslt_calls", runtime::lt_gemm_calls() - lt_before}};
    };
    r["direct_externs"] = switched("KILN_DIRECT_EXTERNS");
    r["cublaslt"] = switched("KILN_CUBLASLT");
    r["attention_once"] = switched("KILN_ATTENTION_ONCE");
    // cuDNN's attention (as PyTorch picks it) against the memory-efficient kernel called directly: "0" then "1".
    r["attention_efficient"] = switched("KILN_ATTENTION_EFFICIENT");
    ::unsetenv("KILN_INFERENCE_MODE");
  } catch (const std::exception& e) {
    ::unsetenv("KILN_INFERENCE_MODE");
    for (const char* v : {"KILN_DIRECT_EXTERNS", "KILN_CUBLASLT", "KILN_ATTENTION_ONCE", "KILN_ATTENTION_EFFICIENT"}) ::unsetenv(v);
    r["error"] = std::string(e.what()).substr(0, 400);
  }
#else
  (void)package, (void)m, (void)x, (void)cache_root;
#endif
  return r;
}

json bandwidth(const std::string& dir) {
  json all;
  auto x = runtime::make_inputs({parse_input_spec("100000000")})[0].to(torch::kCUDA);
  auto y = at::empty_like(x);
  double copy_ms = steady_ms([&] { y.copy_(x); }, 50);
  double bytes = 2.0 * 4 * 1e8;
  all["copy_ms"] = copy_ms;
  all["copy_gbs"] = bytes / copy_ms / 1e6;
  for (const char* probe : {"pointwise_1e4", "affine"}) {
    std::string file = dir + "/" + probe + ".pt";
    if (!std::filesystem::exists(file)) continue;
    step(std::string("bandwidth: ") + probe);
    auto m = model::load_model(file, "cuda");
    capture::CompileOptions o;
    o.backend = "kiln";
    o.dynamic = false;
    runtime::CapturedRuntime rt(m, o);
    auto out = rt.run({x})[0].toTensor();
    auto& module = const_cast<torch::jit::Module&>(m.impl->module);
    auto ref = runtime::eager_call(module, {x}).toTensor();
    double err = ((out.to(at::kDouble) - ref.to(at::kDouble)).abs().max() / ref.to(at::kDouble).abs().max()).item<double>();
    double k_ms = steady_ms([&] { rt.run({x}); }, 50);
    double e_ms = steady_ms([&] { runtime::eager_call(module, {x}); }, 20);
    all[probe] = {{"kiln_ms", k_ms}, {"kiln_gbs", bytes / k_ms / 1e6}, {"eager_ms", e_ms}, {"rel_err", err}};
  }
  return all;
}

}  // namespace
#endif

int main(int argc, char** argv) {
  kiln::backends::register_builtin_backends();
#if !KILN_TORCH_CUDA
  (void)argc;
  (void)argv;
  std::printf("kiln_gpu_bench: this build's LibTorch has no CUDA; run it on the GPU machine (scripts/device-run)\n");
  return 0;
#else
  if (argc != 4 && !(argc == 6 && std::string(argv[4]) == "--cold")) {
    std::fprintf(stderr, "usage: kiln_gpu_bench DIR NAME|bandwidth OUT.json [--cold MODE]\n");
    return 2;
  }
  std::string dir = argv[1], name = argv[2], out_path = argv[3];
  const std::string cold_mode = argc == 6 ? argv[5] : "";
  ::signal(SIGSEGV, on_crash);
  ::signal(SIGABRT, on_crash);
  json result;
  result["name"] = name;
  result["device"] = cuda::device_name();
  if (name == "bandwidth") {
    result["bandwidth"] = bandwidth(dir);
  } else {
    std::string peer_path = dir + "/" + name + ".peer.json";
    if (!std::filesystem::exists(peer_path)) {
      std::fprintf(stderr, "kiln_gpu_bench: %s: not found (run bench/gpu/peer_bench.py compile first)\n",
                   peer_path.c_str());
      return 1;
    }
    json peer = json::parse(std::ifstream(peer_path));
    std::string precision = peer.value("precision", "highest");
    runtime::set_float32_matmul_precision(precision);
    runtime::set_cudnn_allows_tf32(peer.value("cudnn_allow_tf32", true));
    result["precision"] = runtime::float32_precision_text();
    result["dtype"] = peer.value("dtype", "float32");
    std::vector<InputSpec> specs;
    for (const auto& s : peer["inputs"]) specs.push_back(parse_input_spec(s.get<std::string>()));
    result["inputs"] = peer["inputs"];
    std::string cache_root =
        (std::filesystem::temp_directory_path() / ("kiln-gpu-bench-" + std::to_string(::getpid()))).string();
    step(name + ": load (kernel cache " + cache_root + ")");
    auto m = model::load_model(dir + "/" + name + ".pt", "cuda");
    std::vector<at::Tensor> x;
    for (auto& t : runtime::make_inputs(specs)) x.push_back(t.to(torch::kCUDA));
    runtime::InferenceGuard inference;  // both sides: Kiln runs under it (inference_guard.h)
    bool tf32 = runtime::tf32_in_effect(m);
    result["tf32"] = tf32;
    auto& module = const_cast<torch::jit::Module&>(m.impl->module);
    std::vector<c10::IValue> args(x.begin(), x.end());
    step(name + ": eager");
    auto ref = runtime::clone_value(runtime::eager_call(module, args));
    if (!cold_mode.empty()) {
      // --cold MODE: this process's one compile, after one eager call (as the peer's cold process does), with
      // an empty kernel cache and nothing warmed in-process by another mode (cuDNN's plans, cuBLAS's handles
      // and workspaces are per process).
      c10::cuda::device_synchronize();
      step(name + ": cold compile, " + cold_mode + ", fresh process");
      ::setenv("KILN_CACHE_DIR", (cache_root + "/cold").c_str(), 1);
      capture::CompileOptions o;
      o.backend = "kiln";
      o.mode = cold_mode;
      try {
        result["cold"][cold_mode] = cold_compile(m, x, o);
      } catch (const std::exception& e) {
        result["cold"][cold_mode] = {{"error", e.what()}};
      }
      std::fprintf(stderr, "%s kiln cold %s: %s\n", name.c_str(), cold_mode.c_str(), result["cold"][cold_mode].dump().c_str());
      kiln::remove_tree(cache_root);
      std::ofstream(out_path) << result.dump(1);
      std::fflush(nullptr);
      std::_Exit(0);  // as below: no static destructors after CUDA graph captures
    }
    auto eager = [&] { runtime::eager_call(module, args); };
    double spread = 0;
    double eager_ms = steady_ms(eager, 100, &spread);
    json eager_kernels;
    double eager_device = device_ms(eager, 20, &eager_kernels);
    fresh_workspaces();
    double eager_peak = peak_mib(eager);
    result["eager"] = {{"ms", eager_ms},           {"spread", spread},          {"device_ms", eager_device},
                       {"kernels", eager_kernels}, {"peak_mib", eager_peak}, {"host", host_breakdown(eager)}};
    // KILN_BENCH_KILN_MODES narrows or extends Kiln's side (comma-separated; "mode@layout" for a layout A/B).
    const char* modes_env = std::getenv("KILN_BENCH_KILN_MODES");
    std::string modes = modes_env && *modes_env ? modes_env : "default,reduce-overhead,max-autotune";
    std::stringstream ms(modes);
    for (std::string mode; std::getline(ms, mode, ',');) {
      if (mode.empty()) continue;
      result["kiln"][mode] = run_kiln(m, x, ref, tf32, mode, cache_root, eager);
      std::fprintf(stderr, "%s kiln %s: %s\n", name.c_str(), mode.c_str(), result["kiln"][mode].dump().c_str());
    }
    // Eager once more after every Kiln mode (and CUPTI trace) ran in this process: a difference from its
    // first figure is left behind by what ran in between, and would bias every later measurement.
    result["eager"]["ms_end"] = steady_ms(eager, 100);
    fresh_workspaces();
    result["eager"]["peak_mib_end"] = peak_mib(eager);
    if (!env_set("KILN_BENCH_NO_AOTI")) {
      result["aoti"] = run_aoti(dir + "/" + name + ".aoti.pt2", x, ref, tf32);
      std::fprintf(stderr, "%s aoti: %s\n", name.c_str(), result["aoti"].dump().c_str());
      if (result["kiln"].contains("default") && !result["aoti"].contains("error"))
        result["default_against_aoti"] = default_against_aoti(dir + "/" + name + ".aoti.pt2", m, x, cache_root);
    }
    kiln::remove_tree(cache_root);
  }
  std::ofstream(out_path) << result.dump(1);
  // Every result is written and flushed; leave without static destructors, which crash in
  // LibTorch's CUDA teardown after CUDA graph captures in this process (seen on the H100).
  std::fflush(stdout);
  std::fflush(stderr);
  std::_Exit(0);
#endif
}
