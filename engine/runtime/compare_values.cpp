#include "engine/runtime/compare_values.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace kiln::runtime {

ValueDiff compare_tensors_as(const std::string& what, const at::Tensor& actual, const at::Tensor& expected, double rtol,
                             double atol, bool scale_atol, at::ScalarType work) {
  ValueDiff d;
  d.what = what;
  if (!actual.defined() || !expected.defined()) {
    d.ok = actual.defined() == expected.defined();
    if (!d.ok) d.problem = actual.defined() ? "eager gave no tensor" : "compiled gave no tensor";
    return d;
  }
  if (actual.sizes() != expected.sizes()) {
    d.ok = false;
    d.max_abs = d.max_rel = INFINITY;
    d.problem = "sizes " + c10::str(actual.sizes()) + ", eager " + c10::str(expected.sizes());
    return d;
  }
  d.elements = expected.numel();
  if (d.elements == 0) return d;
  at::NoGradGuard no_grad;
  // Where both already are (a GPU's result is not copied to the host and widened there: the GEMM races
  // compare every candidate's output, tens of MB each), else on the host.
  const bool together = actual.device() == expected.device();
  at::Tensor a = together ? actual.detach() : actual.detach().cpu(), b = together ? expected.detach() : expected.detach().cpu();
  if (!b.is_floating_point() && !a.is_floating_point()) {
    auto ne = a.to(at::kLong) != b.to(at::kLong);
    d.mismatched = ne.sum().item<int64_t>();
    d.ok = d.mismatched == 0;
    if (!d.ok) {
      d.max_abs = (a.to(at::kDouble) - b.to(at::kDouble)).abs().max().item<double>();
      double scale = b.to(at::kDouble).abs().max().item<double>();
      d.max_rel = d.max_abs / std::max(scale, 1e-12);
    }
    return d;
  }
  if (b.scalar_type() == at::kHalf || b.scalar_type() == at::kBFloat16) scale_atol = true;
  if (a.scalar_type() == at::kDouble || b.scalar_type() == at::kDouble) work = at::kDouble;
  a = a.to(work);
  b = b.to(work);
  at::Tensor finite_b = b.abs().masked_fill_(b.isfinite().logical_not_(), 0);
  const double scale = finite_b.max().item<double>();
  if (scale_atol) atol *= std::max(1.0, scale);
  // Equal elements (NaN with NaN, an infinity with the same one) differ by 0; any other pair with a
  // non-finite side by infinity.
  at::Tensor equal = a.eq(b).logical_or_(a.isnan().logical_and_(b.isnan()));
  at::Tensor nonfinite = a.isfinite().logical_and_(b.isfinite()).logical_not_();
  at::Tensor diff = (a - b).abs_();
  diff.masked_fill_(nonfinite, INFINITY).masked_fill_(equal, 0);
  at::Tensor bad = diff.gt(finite_b.mul_(rtol).add_(atol)).logical_or_(nonfinite).logical_and_(equal.logical_not_());
  d.mismatched = bad.sum().item<int64_t>();
  d.ok = d.mismatched == 0;
  d.max_abs = diff.max().item<double>();
  d.max_rel = d.max_abs == 0 ? 0 : d.max_abs / std::max(scale, 1e-12);
  return d;
}

ValueDiff compare_tensors(const std::string& what, const at::Tensor& actual, const at::Tensor& expected, double rtol,
                          double atol, bool scale_atol) {
  const bool on_host = !actual.defined() || !expected.defined() || actual.device().is_cpu() ||
                       actual.device() != expected.device();
  return compare_tensors_as(what, actual, expected, rtol, atol, scale_atol, on_host ? at::kDouble : at::kFloat);
}

namespace {

void compare_into(const std::string& what, const c10::IValue& a, const c10::IValue& b, double rtol, double atol,
                  std::vector<ValueDiff>& out, bool scale_atol = false) {
  if (a.isTensor() && b.isTensor()) {
    out.push_back(compare_tensors(what, a.toTensor(), b.toTensor(), rtol, atol, scale_atol));
    return;
  }
  auto items = [](const c10::IValue& v) -> std::vector<c10::IValue> {
    if (v.isTuple()) return v.toTupleRef().elements().vec();
    if (v.isList()) return v.toListRef().vec();
    return {};
  };
  if ((a.isTuple() || a.isList()) && (b.isTuple() || b.isList())) {
    auto x = items(a), y = items(b);
    if (x.size() != y.size()) {
      ValueDiff d;
      d.what = what;
      d.ok = false;
      d.problem = std::to_string(x.size()) + " elements, eager " + std::to_string(y.size());
      out.push_back(d);
      return;
    }
    for (size_t i = 0; i < x.size(); ++i) compare_into(what + "." + std::to_string(i), x[i], y[i], rtol, atol, out, scale_atol);
    return;
  }
  auto number = [](const c10::IValue& v) { return v.isDouble() || v.isInt() || v.isBool(); };
  if (number(a) && number(b)) {
    auto scalar = [](const c10::IValue& v) {
      return at::scalar_tensor(v.isDouble() ? v.toDouble() : v.isInt() ? static_cast<double>(v.toInt()) : v.toBool(),
                               at::kDouble);
    };
    out.push_back(compare_tensors(what, scalar(a), scalar(b), rtol, atol));
    return;
  }
  ValueDiff d;
  d.what = what;
  d.elements = 1;
  if (a.isString() && b.isString()) d.ok = a.toStringRef() == b.toStringRef();
  else if (a.isNone() && b.isNone()) d.ok = true;
  else {
    d.ok = a.tagKind() == b.tagKind();
    if (!d.ok) d.problem = "a " + a.tagKind() + ", eager a " + b.tagKind();
  }
  if (!d.ok && d.problem.empty()) d.problem = "values differ";
  if (!d.ok) d.mismatched = 1;
  out.push_back(d);
}

}  // namespace

std::vector<ValueDiff> compare_values(const std::string& what, const c10::IValue& actual, const c10::IValue& expected,
                                      double rtol, double atol, bool scale_atol) {
  std::vector<ValueDiff> out;
  compare_into(what, actual, expected, rtol, atol, out, scale_atol);
  return out;
}

bool all_ok(const std::vector<ValueDiff>& diffs) {
  for (const auto& d : diffs)
    if (!d.ok) return false;
  return true;
}

namespace {
// -1: no floating leaf; 0: some leaf varies; 1: every floating leaf is constant.
int constant_leaves(const c10::IValue& v) {
  auto merge = [](int a, int b) { return a < 0 ? b : b < 0 ? a : (a && b); };
  if (v.isTensor()) {
    const at::Tensor& t = v.toTensor();
    if (!t.defined() || !t.is_floating_point()) return -1;
    if (t.numel() == 0) return 1;
    at::Tensor f = t.detach();
    return (f.max().item<double>() == f.min().item<double>()) ? 1 : 0;
  }
  int out = -1;
  if (v.isTuple())
    for (const auto& e : v.toTupleRef().elements()) out = merge(out, constant_leaves(e));
  else if (v.isTensorList())
    for (const at::Tensor& t : v.toTensorList().vec()) out = merge(out, constant_leaves(c10::IValue(t)));
  else if (v.isList())
    for (const auto& e : v.toListRef()) out = merge(out, constant_leaves(e));
  return out;
}
}  // namespace

bool floating_leaves_constant(const c10::IValue& v) { return constant_leaves(v) == 1; }

c10::IValue clone_value(const c10::IValue& v) {
  if (v.isTensor()) return v.toTensor().defined() ? c10::IValue(v.toTensor().clone()) : v;
  if (v.isTuple()) {
    std::vector<c10::IValue> items;
    for (const auto& e : v.toTupleRef().elements()) items.push_back(clone_value(e));
    return c10::ivalue::Tuple::create(std::move(items));
  }
  if (v.isTensorList()) {
    c10::List<at::Tensor> list;
    for (const at::Tensor& t : v.toTensorList().vec()) list.push_back(t.defined() ? t.clone() : t);
    return list;
  }
  return v;
}

std::string Tolerance::str() const {
  char buf[64];
  std::snprintf(buf, sizeof buf, "rtol %.0e, atol %.0e", rtol, atol);
  return buf;
}

Tolerance tolerance_for(c10::ScalarType dtype, bool tf32) {
  switch (dtype) {
    case at::kDouble: return {1e-7, 1e-9};
    case at::kFloat: return tf32 ? Tolerance{2e-3, 2e-3, true} : Tolerance{1e-4, 1e-5, false};
    // 16-bit floats: atol is five spacings of the format (2^-10 float16, 2^-8 bfloat16) relative
    // to the output's largest magnitude (compare_tensors scales it): eager rounds every op's result
    // to 16 bits while fused kernels keep float32 between ops, so after a deep stack (BERT's four
    // layers: 3.5 spacings measured) outputs near zero differ by a few units of the largest one.
    case at::kHalf: return {1e-2, 5e-3};
    case at::kBFloat16: return {2e-2, 2e-2};
    default: return {0, 0};
  }
}

namespace {

void loosest(const c10::IValue& v, Tolerance& t, bool tf32) {
  if (v.isTensor()) {
    const auto& x = v.toTensor();
    if (!x.defined()) return;
    Tolerance here = tolerance_for(x.scalar_type(), tf32);
    t.rtol = std::max(t.rtol, here.rtol);
    t.atol = std::max(t.atol, here.atol);
    t.scale_atol = t.scale_atol || here.scale_atol;
  } else if (v.isTuple()) {
    for (const auto& e : v.toTupleRef().elements()) loosest(e, t, tf32);
  } else if (v.isList()) {
    for (const auto& e : v.toListRef()) loosest(e, t, tf32);
  } else if (v.isDouble()) {
    Tolerance here = tolerance_for(at::kDouble);
    t.rtol = std::max(t.rtol, here.rtol);
    t.atol = std::max(t.atol, here.atol);
  }
}

}  // namespace

Tolerance tolerance_for(const c10::IValue& expected, bool tf32) {
  Tolerance t;
  loosest(expected, t, tf32);
  return t;
}

ValueError value_error(const std::vector<ValueDiff>& diffs) {
  ValueError e;
  for (const auto& d : diffs) {
    e.max_abs = std::max(e.max_abs, d.max_abs);
    e.max_rel = std::max(e.max_rel, d.max_rel);
    e.ok = e.ok && d.ok;
    if (e.problem.empty() && !d.problem.empty()) e.problem = d.what + ": " + d.problem;
  }
  return e;
}

ValueError compare_to_eager(const c10::IValue& actual, const c10::IValue& expected, bool tf32) {
  Tolerance t = tolerance_for(expected, tf32);
  return value_error(compare_values("output", actual, expected, t.rtol, t.atol, t.scale_atol));
}

}  // namespace kiln::runtime
