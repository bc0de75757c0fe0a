#include "engine/capture/guards.h"

#include <chrono>
#include <map>
#include <sstream>

#include "engine/capture/torch_meta.h"

namespace kiln::capture {

namespace {

std::string dtype_text(c10::ScalarType t) { return ir::dtype_name(to_ir_dtype(t)); }

}  // namespace

GuardFailure check_guards(SpecializedRegion& entry, const std::vector<c10::IValue>& inputs) {
  auto t0 = std::chrono::steady_clock::now();
  GuardFailure result;
  std::string& fail = result.text;
  std::map<std::string, int64_t> bindings;
  for (size_t i = 0; i < entry.inputs.size() && fail.empty(); ++i) {
    const auto& g = entry.inputs[i];
    const auto& iv = inputs[i];
    if (g.undefined_tensor) {
      if (iv.isTensor() && iv.toTensor().defined()) fail = "'" + g.name + "' is no longer None (an undefined tensor)";
      continue;
    }
    if (g.tensor) {
      if (!iv.isTensor()) {
        fail = "'" + g.name + "' is no longer a tensor";
        break;
      }
      const auto& t = iv.toTensor();
      const std::string who = "tensor '" + g.name + "'";
      if (t.scalar_type() != g.dtype) {
        fail = who + " dtype mismatch. expected " + dtype_text(g.dtype) + ", actual " + dtype_text(t.scalar_type());
      } else if (t.device() != g.device) {
        fail = who + " device mismatch. expected " + g.device.str() + ", actual " + t.device().str();
      } else if (t.dim() != static_cast<int64_t>(g.sizes.size())) {
        fail = who + " rank mismatch. expected " + std::to_string(g.sizes.size()) + ", actual " + std::to_string(t.dim());
      } else {
        for (size_t d = 0; d < g.sizes.size() && fail.empty(); ++d) {
          int64_t actual = t.size(static_cast<int64_t>(d));
          if (g.sizes[d]) {
            if (actual != *g.sizes[d]) {
              result.input = static_cast<int>(i);
              result.dim = static_cast<int>(d);
            }
            if (actual != *g.sizes[d])
              fail = who + " size mismatch at index " + std::to_string(d) + ". expected " + std::to_string(*g.sizes[d]) +
                     ", actual " + std::to_string(actual);
          } else {
            if (actual < 2)
              fail = who + " size mismatch at index " + std::to_string(d) + ". expected " + g.symbols[d] +
                     " >= 2, actual " + std::to_string(actual);
            bindings[g.symbols[d]] = actual;
          }
        }
        if (fail.empty()) {
          if (!g.strides.empty()) {
            auto st = t.strides();
            for (size_t d = 0; d < g.strides.size(); ++d)
              if (st[d] != g.strides[d]) {
                fail = who + " stride mismatch at index " + std::to_string(d) + ". expected " +
                       std::to_string(g.strides[d]) + ", actual " + std::to_string(st[d]);
                break;
              }
          } else if (t.is_contiguous() != g.contiguous) {
            fail = who + " contiguity mismatch. expected " + (g.contiguous ? "contiguous" : "non-contiguous");
          }
        }
        if (fail.empty() && t.requires_grad() != g.requires_grad)
          fail = who + " requires_grad mismatch. expected requires_grad=" + (g.requires_grad ? "1" : "0");
      }
    } else if (g.value) {
      bool same = false;
      if (g.value->isInt() && iv.isInt()) same = g.value->toInt() == iv.toInt();
      else if (g.value->isDouble() && iv.isDouble()) same = g.value->toDouble() == iv.toDouble();
      else if (g.value->isBool() && iv.isBool()) same = g.value->toBool() == iv.toBool();
      if (!same) {
        std::ostringstream e, a;
        e << *g.value;
        a << iv;
        fail = "scalar '" + g.name + "' value mismatch. expected " + e.str() + ", actual " + a.str();
      }
    }
  }
  for (size_t i = 0; i < entry.decisions.size() && fail.empty(); ++i) {
    const auto& d = entry.decisions[i];
    if (!d.expr) continue;
    auto v = sym_eval(d.expr, bindings);
    if (!v || static_cast<bool>(*v) != d.expected) {
      std::string vals;
      for (const auto& [s, x] : bindings) vals += (vals.empty() ? "" : ", ") + s + " = " + std::to_string(x);
      fail = "guard failed: " + d.text + " (" + vals + ")";
    }
  }
  if (fail.empty() && at::GradMode::is_enabled() != entry.grad_mode) fail = "GLOBAL_STATE changed: grad_mode";
  auto t1 = std::chrono::steady_clock::now();
  entry.info.guards.evaluations++;
  entry.info.guards.eval_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count();
  return result;
}

}  // namespace kiln::capture
