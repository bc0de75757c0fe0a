// The one place that knows which LibTorch Kiln is built against.
//
// Kiln builds with Debian's LibTorch 1.13 (CPU) and with the torch 2.11 wheel's
// LibTorch (CUDA). Every difference between the two that Kiln's code meets is
// expressed here, so the rest of the engine is written once.
#pragma once

#include <torch/script.h>
#include <torch/version.h>

#include <optional>
#include <string>

namespace kiln::compat {

inline std::string torch_version() {
  return std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
         std::to_string(TORCH_VERSION_PATCH);
}

#if TORCH_VERSION_MAJOR >= 2
inline constexpr bool kTorch2 = true;
#else
inline constexpr bool kTorch2 = false;
#endif

// c10::optional became an alias of std::optional in 2.x; convert explicitly so
// call sites compile against both.
template <typename T>
std::optional<T> to_std(const c10::optional<T>& o) {
  if (o.has_value()) return *o;
  return std::nullopt;
}

// at::scaled_dot_product_attention(q, k, v, mask, 0, false, scale): flash, memory-efficient, cuDNN or math
// attention as PyTorch picks. LibTorch 1.x has no such call (nor a scale for its private one): an undefined
// tensor there, and the caller computes the steps itself.
inline at::Tensor scaled_dot_product_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                               const at::Tensor& mask, double scale) {
#if TORCH_VERSION_MAJOR >= 2
  return at::scaled_dot_product_attention(q, k, v, mask.defined() ? std::optional<at::Tensor>(mask) : std::nullopt,
                                          0.0, false, scale);
#else
  (void)q, (void)k, (void)v, (void)mask, (void)scale;
  return {};
#endif
}

// What steers scaled_dot_product_attention's pick of a backend besides its operands: the switches of flash,
// memory-efficient, math and cuDNN attention and deterministic mode, as one number (LibTorch 1.x: the last only).
inline int64_t sdp_switches() {
  const auto& ctx = at::globalContext();
#if TORCH_VERSION_MAJOR >= 2
  return ctx.userEnabledFlashSDP() | ctx.userEnabledMemEfficientSDP() << 1 | ctx.userEnabledMathSDP() << 2 |
         ctx.userEnabledCuDNNSDP() << 3 | ctx.deterministicAlgorithms() << 4;
#else
  return ctx.deterministicAlgorithms() << 4;
#endif
}

// "no freezing optimisations": keep batch_norm, dropout and friends visible.
inline torch::jit::Module freeze_for_capture(const torch::jit::Module& m);

}  // namespace kiln::compat

#include <torch/csrc/jit/passes/freeze_module.h>

namespace kiln::compat {
inline torch::jit::Module freeze_for_capture(const torch::jit::Module& m) {
  return torch::jit::freeze(m, c10::nullopt, /*optimize_numerics=*/false);
}
}  // namespace kiln::compat
