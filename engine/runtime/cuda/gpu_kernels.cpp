#include "engine/runtime/cuda/gpu_kernels.h"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <map>

#include "engine/base/error.h"
#include "engine/runtime/tuning_progress.h"

#if KILN_TORCH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <cuda_runtime_api.h>
#endif

namespace kiln::runtime {

namespace {
std::string& forced_form() {
  static std::string suffix;
  return suffix;
}
}  // namespace

void force_kernel_form_for_testing(const std::string& suffix) { forced_form() = suffix; }

#if KILN_TORCH_CUDA

namespace {

int64_t range_size(const std::vector<lowering::Sym>& range, const std::map<std::string, int64_t>& b) {
  int64_t n = 1;
  for (const auto& s : range) {
    auto v = capture::sym_eval(s, b);
    if (!v) throw Error("CUDA launch: size " + capture::sym_str(s) + " cannot be evaluated");
    n *= *v;
  }
  return n;
}

// The most threads per block this form of kernel k launches with: 1024, or fewer when its registers
// or shared memory do not allow that many (a power of two, so warp and block arithmetic stays whole).
unsigned thread_limit(const GpuKernelSet& set, size_t k, const std::string& function) {
  int most = set.module(k).max_threads_per_block(function);
  unsigned limit = 32;
  while (limit * 2 <= 1024 && static_cast<int>(limit * 2) <= most) limit *= 2;
  return limit;
}

codegen::CudaKernelVariant variant_of(const codegen::CudaKernelInfo& info, size_t v) {
  if (v < info.variants.size()) return info.variants[v];
  return {info.name, info.vector_width, false};
}

// Kernel k's launch for `work` elements or rows with the given form and block size.
GpuKernelSet::Launch plan_launch(const GpuKernelSet& set, size_t k, size_t variant, unsigned threads, int64_t work) {
  const auto& info = set.info[k];
  auto form = variant_of(info, variant);
  threads = std::min(threads, thread_limit(set, k, form.function));
  int64_t per_block = info.row ? (form.row_tile ? form.row_tile
                                  : form.thread_per_row ? static_cast<int64_t>(threads)
                                  : form.warp_per_row ? std::max<int64_t>(1, threads / 32)
                                                      : 1)
                               : static_cast<int64_t>(threads) * form.vector_width;
  int64_t blocks = std::max<int64_t>(1, (work + per_block - 1) / per_block);
  blocks = std::min<int64_t>(blocks, info.row ? (int64_t(1) << 30) : 65535 * 64);
  return {set.module(k).function(form.function), static_cast<unsigned>(blocks), threads, work};
}

// Whether form v of kernel k may run on these buffers: a form that moves float4s (aligned16) needs every buffer
// of the kernel 16-byte aligned.
bool form_fits(const GpuKernelSet& set, size_t k, size_t v, void* const* ptrs) {
  const auto& info = set.info[k];
  if (v >= info.variants.size() || !info.variants[v].aligned16) return true;
  uintptr_t bits = 0;
  for (int b : info.buffers) bits |= reinterpret_cast<uintptr_t>(ptrs[b]);
  return (bits & 15) == 0;
}

void launch_one(const GpuKernelSet& set, size_t k, size_t variant, unsigned threads, int64_t work,
                std::vector<char>& args, cuda::Stream stream) {
  auto l = plan_launch(set, k, variant, threads, work);
  cuda::launch(l.function, l.blocks, l.threads, 0, stream, args.data(), args.size());
}

}  // namespace

std::vector<KernelCall> make_gpu_calls(const std::shared_ptr<GpuKernelSet>& set) {
  std::vector<KernelCall> calls;
  set->threads.assign(set->info.size(), 0);
  set->tuned.assign(set->info.size(), !set->autotune);
  set->candidates.assign(set->info.size(), {});
  set->variant.assign(set->info.size(), 0);
  set->last_launch.assign(set->info.size(), {});
  for (size_t k = 0; k < set->info.size(); ++k) {
    // Row tiles come with the block size that splits their rows (emit_cuda.h); everything else 256.
    const auto first = variant_of(set->info[k], 0);
    set->threads[k] = first.threads > 0 ? static_cast<unsigned>(first.threads) : 256;
    calls.push_back([set, k](void* const* ptrs, const double* scalars, const int64_t* syms) {
      // The kernel's own argument block (KilnArgs_<name>): its buffers, then the region's scalars and sizes.
      thread_local std::vector<char> args;
      set->args.pack_own(args, set->info[k].buffers, ptrs, scalars, syms);
      int64_t work = 0;
      if (set->symbols.empty()) {
        work = set->last_launch[k].function ? set->last_launch[k].work : range_size(set->info[k].range, {});
      } else {
        std::map<std::string, int64_t> bindings;
        for (size_t i = 0; i < set->symbols.size(); ++i) bindings[set->symbols[i]] = syms[i];
        work = range_size(set->info[k].range, bindings);
      }
      auto stream = static_cast<cuda::Stream>(at::cuda::getCurrentCUDAStream().stream());
      // The steady state: tuned, and the same amount of work as the last call: launch as then.
      const auto& last = set->last_launch[k];
      // The chosen form, or the kernel's own where the chosen one needs aligned buffers these are not.
      const bool fits = form_fits(*set, k, set->variant[k], ptrs);
      if (set->tuned[k] && last.function && last.work == work && fits) {
        cuda::launch(last.function, last.blocks, last.threads, 0, stream, args.data(), args.size());
        return;
      }
      cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
      if (!set->tuned[k]) cudaStreamIsCapturing(static_cast<cudaStream_t>(stream), &capturing);
      if (!set->tuned[k] && capturing == cudaStreamCaptureStatusNone) {
        // max-autotune: time each candidate (elements per thread x block size) on the real buffers
        // (kernels never write their inputs, so repeating them is harmless) and keep the fastest.
        const unsigned options[] = {64, 128, 256, 512, 1024};
        const auto& info = set->info[k];
        size_t forms = std::max<size_t>(1, info.variants.size());
        float best = 1e30f;
        size_t best_index = 0;
        // The kernel's own launch (its first form, its block size) and its time: kept unless a candidate beats it
        // by kMargin. Timed alone, back to back on the same buffers, most winners are within a percent or two of it
        // (ConvNeXt-T on the H200: its first-stage GELU kernels picked 128 threads at 1.3 % under 256), which is
        // noise, and a pick by noise changes from one compile to the next.
        constexpr float kMargin = 0.03f;
        const unsigned own_threads = set->threads[k];
        float own_ms = -1;
        size_t own_index = 0;
        const int total = static_cast<int>(forms * std::size(options));
        // Tests only (force_kernel_form_for_testing): the form to keep, if this kernel has it.
        size_t forced = forms;
        if (!forced_form().empty())
          for (size_t v = 1; v < forms; ++v)
            if (variant_of(info, v).function == info.name + forced_form()) forced = v;
        for (size_t v = 0; v < forms; ++v) {
          auto form = variant_of(info, v);
          const unsigned limit = thread_limit(*set, k, form.function);
          for (unsigned t : options) {
            report_tuning(info.name, static_cast<int>(set->candidates[k].size()), total);
            if (!form_fits(*set, k, v, ptrs)) {
              set->candidates[k].push_back({"threads=" + std::to_string(t) + " (" + form.function +
                                                "): skipped, its float4s need every buffer 16-byte aligned",
                                            -1.0f, false});
              continue;
            }
            if (t > limit) {
              // More threads than this kernel's registers allow: not a candidate (the launch would fail).
              set->candidates[k].push_back({"threads=" + std::to_string(t) + ", elements/thread=" +
                                                std::to_string(form.vector_width) + " (" + form.function +
                                                "): skipped, at most " + std::to_string(limit) +
                                                " threads per block for its registers",
                                            -1.0f, false});
              continue;
            }
            for (int w = 0; w < 2; ++w) launch_one(*set, k, v, t, work, args, stream);
            cuda::EventTimer timer(stream);
            timer.start();
            const int reps = 10;
            for (int r = 0; r < reps; ++r) launch_one(*set, k, v, t, work, args, stream);
            float ms = timer.stop_ms() / reps;
            std::string config = "threads=" + std::to_string(t) + ", elements/thread=" +
                                 std::to_string(form.vector_width) +
                                 (info.row ? (form.row_tile ? ", rows in tiles of " + std::to_string(form.row_tile) + " (" +
                                                                    std::to_string(t / form.row_tile) + " slices per row)"
                                              : form.thread_per_row ? std::string(", one thread per row")
                                              : form.warp_per_row ? ", one warp per row (" + std::to_string(t / 32) +
                                                                      " rows per block)"
                                                                  : std::string(", one block per row"))
                                           : form.window_rows
                                               ? " (" + std::to_string(form.vector_width / (form.window_lanes * form.window_height)) +
                                                     " along the width x " +
                                                     (form.window_height > 1 ? std::to_string(form.window_height) + " along the height x "
                                                                             : std::string()) +
                                                     std::to_string(form.window_lanes) + " channels, " + form.function + ")"
                                           : form.vector_width == 4 ? " (" + form.function + ", float4 when aligned)"
                                                                    : " (" + form.function + ")");
            set->candidates[k].push_back({config, ms, false});
            if (v == 0 && t == own_threads) {
              own_ms = ms;
              own_index = set->candidates[k].size() - 1;
            }
            if (forced < forms && v != forced) continue;
            if (ms < best) {
              best = ms;
              best_index = set->candidates[k].size() - 1;
              set->threads[k] = t;
              set->variant[k] = v;
            }
          }
        }
        if (forced == forms && own_ms > 0 && best > own_ms * (1 - kMargin)) {
          best_index = own_index;
          set->threads[k] = own_threads;
          set->variant[k] = 0;
        }
        for (size_t i = 0; i < set->candidates[k].size(); ++i) set->candidates[k][i].chosen = i == best_index;
        report_tuning(info.name, total, total);
        set->tuned[k] = true;
      }
      const bool chosen_fits = form_fits(*set, k, set->variant[k], ptrs);
      auto l = plan_launch(*set, k, chosen_fits ? set->variant[k] : 0, set->threads[k], work);
      if (set->tuned[k] && chosen_fits) set->last_launch[k] = l;
      cuda::launch(l.function, l.blocks, l.threads, 0, stream, args.data(), args.size());
    });
  }
  return calls;
}

#else

std::vector<KernelCall> make_gpu_calls(const std::shared_ptr<GpuKernelSet>&) {
  throw Error("CUDA kernels need a LibTorch built with CUDA (this one is CPU only)");
}

#endif

}  // namespace kiln::runtime
