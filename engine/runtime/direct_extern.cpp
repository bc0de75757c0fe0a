#include "engine/runtime/direct_extern.h"

#include <ATen/ops/convolution_compositeexplicitautograd_dispatch.h>
#if KILN_TORCH_CUDA
#include <ATen/ops/bmm_cuda_dispatch.h>
#include <ATen/ops/gather_cuda_dispatch.h>
#include <ATen/ops/index_select_cuda_dispatch.h>
#include <ATen/ops/mm_cuda_dispatch.h>
#endif
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/ir/constants.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>

#include "engine/base/error.h"
#include "engine/model/torch_compat.h"

namespace kiln::runtime {

using lowering::Comp;

namespace {

// A literal integer list: a constant (an int broadcast to both dims, as the op's int[2] does) or a list built
// from constants; nothing when any part is computed at run time.
std::optional<std::vector<int64_t>> literal_ints(const torch::jit::Value* v) {
  if (auto iv = torch::jit::toIValue(v)) {
    if (iv->isIntList()) return iv->toIntVector();
    if (iv->isInt()) return std::vector<int64_t>{iv->toInt(), iv->toInt()};
    return std::nullopt;
  }
  const auto* n = v->node();
  if (n->kind() != c10::prim::ListConstruct) return std::nullopt;
  std::vector<int64_t> out;
  for (const auto* in : n->inputs()) {
    auto iv = torch::jit::toIValue(in);
    if (!iv || !iv->isInt()) return std::nullopt;
    out.push_back(iv->toInt());
  }
  return out;
}

bool is_none(const torch::jit::Value* v) {
  auto iv = torch::jit::toIValue(v);
  return iv && iv->isNone();
}

std::atomic<uint64_t> calls{0};

// Computation of tensor argument i, or -1.
int operand(const Comp& comp, size_t i) { return i < comp.operands.size() ? comp.operands[i] : -1; }

// at::mm; without gradients on the GPU its CUDA kernel directly (what AOTInductor's C shim calls): no dispatch
// and no autograd wrapper around it.
at::Tensor product(const at::Tensor& a, const at::Tensor& b) {
#if KILN_TORCH_CUDA
  if (a.is_cuda() && b.is_cuda() && !at::GradMode::is_enabled()) return at::cuda::mm(a, b);
#endif
  return at::mm(a, b);
}

// at::bmm; without gradients on the GPU its CUDA kernel directly, as product() does for mm.
at::Tensor batched(const at::Tensor& a, const at::Tensor& b) {
#if KILN_TORCH_CUDA
  if (a.is_cuda() && b.is_cuda() && !at::GradMode::is_enabled()) return at::cuda::bmm(a, b);
#endif
  return at::bmm(a, b);
}

// a[..., n, k] @ b[..., k, m], both of three or more dimensions with the same leading (batch) sizes and dtype:
// what matmul computes for them (its batch folded into one dimension, a view where the strides allow and a
// copy where they do not, one batched product, the result viewed back) without matmul's own broadcasting
// steps and dispatches: attention's products. Undefined when the shapes need more (matmul then, its checks and
// messages included).
at::Tensor batch_product(const at::Tensor& a, const at::Tensor& b) {
  const int64_t dims = a.dim();
  if (dims < 3 || b.dim() != dims || a.scalar_type() != b.scalar_type() || a.size(-1) != b.size(-2)) return {};
  int64_t batch = 1;
  for (int64_t i = 0; i < dims - 2; ++i) {
    if (a.size(i) != b.size(i)) return {};
    batch *= a.size(i);
  }
  if (dims == 3) return batched(a, b);
  at::Tensor y = batched(a.reshape({batch, a.size(-2), a.size(-1)}), b.reshape({batch, b.size(-2), b.size(-1)}));
  std::vector<int64_t> sizes(a.sizes().begin(), a.sizes().end());
  sizes.back() = b.size(-1);
  return y.view(sizes);
}

// A product of two matrices: cuBLASLt directly where it takes it (lt_gemm.h), else product().
at::Tensor matrix_product(const DirectExtern& d, const at::Tensor& a, const at::Tensor& b, bool lt) {
  if (d.own) {
    at::Tensor y = d.own->mm(a, b);
    if (y.defined()) return y;
  }
  if (lt && d.lt) {
    at::Tensor y = d.lt->mm(a, b);
    if (y.defined()) return y;
  }
  return product(a, b);
}

// x[..., K] @ m[K, N] for a contiguous x of more than two dimensions, its leading dimensions as the rows of one
// product (what matmul and linear do with such an x: its view as a matrix, mm, the result viewed back) through
// matrix_product: cuBLASLt where it takes it, else mm's own kernel, so a float32 linear on a batch of tokens or
// on an image's pixels skips linear's and matmul's dispatch layers too (28-45 us of host each on the H100, more
// than the product's launch). Undefined when the shapes need matmul itself (sizes that do not match, no
// elements: its checks and messages).
at::Tensor rows_product(const DirectExtern& d, const at::Tensor& x, const at::Tensor& m, bool lt) {
  if (x.dim() <= 2 || m.dim() != 2 || !x.is_contiguous() || x.size(-1) != m.size(0) || x.numel() == 0 ||
      m.numel() == 0 || x.scalar_type() != m.scalar_type() || x.device() != m.device())
    return {};
  at::Tensor y = matrix_product(d, x.view({-1, x.size(-1)}), m, lt);
  std::vector<int64_t> sizes(x.sizes().begin(), x.sizes().end());
  sizes.back() = m.size(1);
  return y.view(sizes);
}

// weight.index_select(0, indices): on the GPU without gradients index_select's CUDA kernel directly.
at::Tensor select_rows(const at::Tensor& weight, const at::Tensor& indices) {
#if KILN_TORCH_CUDA
  if (weight.is_cuda() && indices.is_cuda() && !at::GradMode::is_enabled()) return at::cuda::index_select(weight, 0, indices);
#endif
  return at::index_select(weight, 0, indices);
}

// embedding's forward (its own body: the rows of a matrix by integer indices of any shape, padding_idx and
// scale_grad_by_freq matter only to its gradient); undefined where embedding itself should answer (its checks
// and messages: a weight that is no matrix, indices that are no integers).
at::Tensor embedding_rows(const at::Tensor& weight, const at::Tensor& indices) {
  if (weight.dim() != 2 || (indices.scalar_type() != at::kLong && indices.scalar_type() != at::kInt)) return {};
  if (indices.dim() == 1) return select_rows(weight, indices);
  std::vector<int64_t> sizes(indices.sizes().begin(), indices.sizes().end());
  sizes.push_back(weight.size(1));
  return select_rows(weight, indices.reshape({-1})).view(sizes);
}

std::atomic<uint64_t> efficient_calls{0};

// An operator of this LibTorch by name, or nothing where it has none (LibTorch 1.x has no fused attention ops).
std::optional<c10::OperatorHandle> registered_op(const char* name) {
  try {
    return c10::Dispatcher::singleton().findSchemaOrThrow(name, "");
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// Whether a problem PyTorch gives cuDNN's attention runs on the memory-efficient kernel: KILN_ATTENTION_EFFICIENT=1
// always, =0 never; otherwise where the call is host-bound (made on every region call, no CUDA graph: default mode)
// and small, at most 2^31 multiply-adds and exponentials' worth of work (4·B·H·L·S·E; GPT-2's and BERT-base's
// attention at batch 8 × 128 tokens is 0.4 · 10^9): there the efficient kernel's few extra microseconds of device
// time are less than the host time it saves, while a CUDA graph's replay pays no host time at all and keeps cuDNN's
// faster kernel.
bool prefer_efficient(const at::Tensor& q, const at::Tensor& k, bool host_bound) {
  if (const char* e = std::getenv("KILN_ATTENTION_EFFICIENT"); e && *e) return std::strcmp(e, "1") == 0;
  if (!host_bound || q.dim() != 4 || k.dim() != 4) return false;
  constexpr double kSmall = 2147483648.0;  // 2^31
  const double work = 4.0 * static_cast<double>(q.size(0)) * static_cast<double>(q.size(1)) *
                      static_cast<double>(q.size(2)) * static_cast<double>(k.size(2)) * static_cast<double>(q.size(3));
  return work <= kSmall;
}

// The memory-efficient attention kernel called directly where PyTorch would pick cuDNN's (prefer_efficient above):
// at GPT-2's bfloat16 attention (8x128, 12 heads of 64) on the H200 cuDNN's op called directly costs 20.5 µs of host
// and 7.05 of device per call from Python, the memory-efficient one 14.8 and 11.77 (bench/gpu/probes/sdpa_host.py;
// the Python floor is 8.1), and default mode pays the host part on every call. The mask as scaled_dot_product_attention hands it to that
// kernel (expanded to [B, H, L, S]); one whose strides the kernel cannot take unpadded (its rows not 8-element
// aligned) is not taken, and a problem the kernel refuses (its checks throw) is remembered and left to cuDNN.
// Undefined where not taken.
at::Tensor efficient_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& mask,
                               double scale, const std::vector<int64_t>& key) {
  if (q.dim() != 4 || k.dim() != 4 || v.dim() != 4) return {};
  if (mask.defined()) {
    if (mask.dim() > 4 || mask.dim() < 1 || mask.stride(-1) != 1) return {};
    for (int64_t d = 0; d + 1 < mask.dim(); ++d)
      if (mask.size(d) > 1 && mask.stride(d) % 8 != 0) return {};
  }
  static std::mutex mu;
  static std::set<std::vector<int64_t>> refused;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (refused.count(key)) return {};
  }
  static const auto op = registered_op("aten::_scaled_dot_product_efficient_attention");
  if (!op) return {};
  try {
    // A mask that does not broadcast to the scores' sizes throws here and is left to cuDNN's call, which says so.
    const at::Tensor bias = mask.defined() ? mask.expand({q.size(0), q.size(1), q.size(2), k.size(2)}) : at::Tensor();
    torch::jit::Stack stack{q, k, v, bias.defined() ? c10::IValue(bias) : c10::IValue(), false, 0.0, false, scale};
    op->callBoxed(&stack);
    efficient_calls.fetch_add(1, std::memory_order_relaxed);
    return stack.at(0).toTensor();
  } catch (const std::exception&) {
    std::lock_guard<std::mutex> lock(mu);
    if (refused.size() >= 4096) refused.clear();
    refused.insert(key);
    return {};
  }
}

// PyTorch's scaled_dot_product_attention picks its backend on every call: each fused kernel's eligibility checks,
// ~8 of its ~32 µs of host per call at BERT-base's bfloat16 sizes on the H200 (bench/gpu/probes/sdpa_host.py). The
// pick depends on the operands' sizes, strides, dtype (and, should it matter, alignment) and the process's switches
// only, so it is asked once per such problem; where it is cuDNN's attention, that op is called as
// scaled_dot_product_attention calls it (the mask of q's dtype as is, no log-sum-exp without gradients, no dropout). Through the dispatcher by name: LibTorch 1.x
// has no such ops (the schema lookup fails once; the caller then calls scaled_dot_product_attention). Undefined
// where this does not apply. KILN_ATTENTION_ONCE=0 leaves the pick to every call (an A/B in one process).
at::Tensor attention_chosen_once(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& mask,
                                 double scale, bool host_bound) {
  if (const char* e = std::getenv("KILN_ATTENTION_ONCE"); e && std::strcmp(e, "0") == 0) return {};
  if (at::GradMode::is_enabled() && (q.requires_grad() || k.requires_grad() || v.requires_grad())) return {};
  if (mask.defined() && mask.scalar_type() != q.scalar_type()) return {};  // a bool mask: the op converts it
  constexpr int64_t kCudnnAttention = 3;  // sdp::SDPBackend::cudnn_attention
  static std::mutex mu;
  static std::map<std::vector<int64_t>, int64_t> choices;
  static bool unavailable = false;
  std::vector<int64_t> key{static_cast<int64_t>(q.scalar_type()), q.device().index()};
  for (const at::Tensor* t : {&q, &k, &v, &mask}) {
    key.push_back(t->defined() ? t->dim() : -1);
    if (!t->defined()) continue;
    key.insert(key.end(), t->sizes().begin(), t->sizes().end());
    key.insert(key.end(), t->strides().begin(), t->strides().end());
    key.push_back(static_cast<int64_t>(reinterpret_cast<uintptr_t>(t->data_ptr()) % 256));
  }
  key.push_back(compat::sdp_switches());
  const c10::IValue mask_arg = mask.defined() ? c10::IValue(mask) : c10::IValue();
  int64_t choice = -1;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (unavailable) return {};
    auto it = choices.find(key);
    if (it != choices.end()) {
      choice = it->second;
    } else {
      try {
        static const auto pick = c10::Dispatcher::singleton().findSchemaOrThrow("aten::_fused_sdp_choice", "");
        torch::jit::Stack stack{q, k, v, mask_arg, 0.0, false, scale, false};
        pick.callBoxed(&stack);
        choice = stack.at(0).toInt();
      } catch (const std::exception&) {
        unavailable = true;
        return {};
      }
      if (choices.size() >= 4096) choices.clear();  // many sequence lengths under dynamic shapes: asked again
      choices.emplace(key, choice);
    }
  }
  if (choice != kCudnnAttention) return {};
  if (prefer_efficient(q, k, host_bound)) {
    at::Tensor out = efficient_attention(q, k, v, mask, scale, key);
    if (out.defined()) return out;
  }
  static const auto cudnn = registered_op("aten::_scaled_dot_product_cudnn_attention");
  if (!cudnn) return {};
  torch::jit::Stack stack{q, k, v, mask_arg, false, 0.0, false, false, scale};
  cudnn->callBoxed(&stack);
  return stack.at(0).toTensor();
}

}  // namespace

uint64_t efficient_attention_calls() { return efficient_calls.load(std::memory_order_relaxed); }

at::Tensor call_attention(const Comp& comp, const std::vector<at::Tensor>& bufs) {
  auto operand_buf = [&](size_t i) -> at::Tensor {
    const int c = i < comp.operands.size() ? comp.operands[i] : -1;
    if (c < 0) return {};
    if (static_cast<size_t>(c) >= bufs.size() || !bufs[static_cast<size_t>(c)].defined())
      throw Error("kiln backend: attention " + comp.name + " has no buffer for operand " + std::to_string(i));
    return bufs[static_cast<size_t>(c)];
  };
  std::array<at::Tensor, 3> qkv;
  for (size_t i = 0; i < 3; ++i) {
    at::Tensor t = operand_buf(i);
    if (!t.defined()) throw Error("kiln backend: attention " + comp.name + " lacks q, k or v");
    const int64_t heads = comp.attn_heads[i];
    if (heads > 0 && comp.attn_widths[i] > 0) {  // a split's piece: its columns of the whole projection, as a view
      // A 2-d [B·T, ·] product is read as [B, T, ·]: B is the output's first size, a number (the matcher reads
      // through a view only when it is).
      const bool rows = t.dim() == 3 || (t.dim() == 2 && !comp.sizes.empty() && capture::sym_is_const(comp.sizes[0]));
      if (!rows || t.size(-1) < comp.attn_offsets[i] + comp.attn_widths[i])
        throw Error("kiln backend: attention " + comp.name + " cannot take columns " + std::to_string(comp.attn_offsets[i]) +
                    "+" + std::to_string(comp.attn_widths[i]) + " of " + c10::str(t.sizes()));
      if (t.dim() == 2) t = t.reshape({comp.sizes[0]->value, -1, t.size(-1)});
      t = t.narrow(2, comp.attn_offsets[i], comp.attn_widths[i]);
    }
    if (heads > 0) {
      if (t.dim() != 3 || t.size(2) % heads != 0)
        throw Error("kiln backend: attention " + comp.name + " cannot split " + c10::str(t.sizes()) + " into " +
                    std::to_string(heads) + " heads");
      t = t.reshape({t.size(0), t.size(1), heads, t.size(2) / heads}).transpose(1, 2);
    }
    qkv[i] = t;
  }
  const at::Tensor mask = operand_buf(3);
  if (qkv[0].is_cuda()) {
    at::Tensor out = attention_chosen_once(qkv[0], qkv[1], qkv[2], mask, comp.attn_scale, comp.attn_host_bound);
    if (out.defined()) return out;
    out = compat::scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], mask, comp.attn_scale);
    if (out.defined()) return out;
  }
  at::Tensor s = at::matmul(qkv[0], qkv[1].transpose(-2, -1));
  if (comp.attn_scale != 1.0) s = s.mul(comp.attn_scale);
  if (mask.defined()) s = s.add(mask);
  return at::matmul(at::softmax(s, -1), qkv[2]);
}

std::optional<DirectExtern> prepare_direct_extern(const Comp& comp, const torch::jit::Node* n) {
  if (comp.kind != Comp::Kind::Extern || !n || n->outputs().empty()) return std::nullopt;
  const auto& t = comp.target;
  if (n->kind().toQualString() != t) return std::nullopt;
  const size_t args = n->inputs().size();
  DirectExtern d;
  auto take = [&](std::initializer_list<size_t> positions) {
    for (size_t i : positions) {
      const int c = operand(comp, i);
      if (c < 0) return false;
      d.tensors.push_back(c);
    }
    return true;
  };
  if (t == "aten::conv2d") {
    if (args != 7) return std::nullopt;
    auto stride = literal_ints(n->input(3)), padding = literal_ints(n->input(4)), dilation = literal_ints(n->input(5));
    auto groups = torch::jit::toIValue(n->input(6));
    if (!stride || !padding || !dilation || !groups || !groups->isInt()) return std::nullopt;  // "same"/"valid"
    if (!take({0, 1})) return std::nullopt;
    if (!comp.drop_bias && !is_none(n->input(2))) {
      if (!take({2})) return std::nullopt;
      d.bias = true;
    }
    d.op = DirectExtern::Op::Conv2d;
    d.stride = std::move(*stride);
    d.padding = std::move(*padding);
    d.dilation = std::move(*dilation);
    d.groups = groups->toInt();
    return d;
  }
  if (t == "aten::linear") {
    if (args != 3 || !take({0, 1})) return std::nullopt;
    if (!comp.drop_bias && !is_none(n->input(2))) {
      if (!take({2})) return std::nullopt;
      d.bias = true;
    }
    d.op = DirectExtern::Op::Linear;
    if (!d.bias) d.lt = std::make_shared<LtGemm>();
    return d;
  }
  if (t == "aten::addmm") {  // only as a product whose readers add the bias; beta and alpha are 1 then
    if (!comp.drop_bias || comp.bias_operand != 0 || args < 3 || !take({1, 2})) return std::nullopt;
    d.op = DirectExtern::Op::Mm;
    d.lt = std::make_shared<LtGemm>();
    return d;
  }
  if (t == "aten::embedding") {  // its padding_idx, scale_grad_by_freq and sparse shape only its gradient
    if (args != 5 || !take({0, 1})) return std::nullopt;
    d.op = DirectExtern::Op::Embedding;
    return d;
  }
  if (t == "aten::gather") {  // gather(self, dim, index, sparse_grad) with a literal dim
    if (args != 4) return std::nullopt;
    auto dim = torch::jit::toIValue(n->input(1)), sparse = torch::jit::toIValue(n->input(3));
    if (!dim || !dim->isInt() || !sparse || !sparse->isBool() || sparse->toBool() || !take({0, 2})) return std::nullopt;
    d.op = DirectExtern::Op::Gather;
    d.dim = dim->toInt();
    return d;
  }
  if (t == "aten::mm" || t == "aten::bmm" || t == "aten::matmul") {
    if (args != 2 || !take({0, 1})) return std::nullopt;
    d.op = t == "aten::mm" ? DirectExtern::Op::Mm : t == "aten::bmm" ? DirectExtern::Op::Bmm : DirectExtern::Op::Matmul;
    if (d.op != DirectExtern::Op::Bmm) d.lt = std::make_shared<LtGemm>();
    return d;
  }
  return std::nullopt;
}

std::optional<DirectExtern> prepare_region_extern(const std::vector<Comp>& comps, size_t c, const torch::jit::Node* node) {
  auto d = prepare_direct_extern(comps[c], node);
  if (d && d->op == DirectExtern::Op::Matmul && d->tensors.size() == 2) {
    const int second = d->tensors[1];
    if (second < 0 || static_cast<size_t>(second) >= comps.size() || comps[static_cast<size_t>(second)].sizes.size() != 2)
      d->lt.reset();
  }
  return d;
}

at::Tensor call_direct_extern(const DirectExtern& d, const std::vector<at::Tensor>& bufs, bool lt) {
  for (int c : d.tensors)
    if (c < 0 || static_cast<size_t>(c) >= bufs.size() || !bufs[static_cast<size_t>(c)].defined()) return {};
  calls.fetch_add(1, std::memory_order_relaxed);
  auto arg = [&](size_t i) -> const at::Tensor& { return bufs[static_cast<size_t>(d.tensors[i])]; };
  const bool bias = d.bias;
  switch (d.op) {
    case DirectExtern::Op::Conv2d: {
      const at::Tensor& x = arg(0);
      c10::optional<at::Tensor> b;
      if (bias) b = arg(2);
      // aten::conv2d of a batched, real input with a bias of its dtype is exactly this call (its own body);
      // anything else goes through it, checks and messages included.
      if (x.dim() == 4 && !x.is_complex() && !x.is_nested() && (!bias || arg(2).scalar_type() == x.scalar_type())) {
        // Without gradients, convolution's own kernel directly (what AOTInductor's C shim calls): no dispatch
        // and no autograd wrapper around it; the ops it calls dispatch as usual.
        if (!at::GradMode::is_enabled())
          return at::compositeexplicitautograd::convolution(x, arg(1), b, d.stride, d.padding, d.dilation, false,
                                                            {0, 0}, d.groups);
        return at::convolution(x, arg(1), b, d.stride, d.padding, d.dilation, false, {0, 0}, d.groups);
      }
      return at::conv2d(x, arg(1), b, d.stride, d.padding, d.dilation, d.groups);
    }
    case DirectExtern::Op::Linear: {
      const at::Tensor &x = arg(0), &w = arg(1);
      if (!bias && w.dim() == 2) {
        if (x.dim() == 2) return matrix_product(d, x, w.t(), lt);  // linear's own body
        if (at::Tensor y = rows_product(d, x, w.t(), lt); y.defined()) return y;
      }
      return bias ? at::linear(x, w, arg(2)) : at::linear(x, w);
    }
    case DirectExtern::Op::Embedding: {
      if (at::Tensor y = embedding_rows(arg(0), arg(1)); y.defined()) return y;
      return at::embedding(arg(0), arg(1));
    }
    case DirectExtern::Op::Gather:
#if KILN_TORCH_CUDA
      if (arg(0).is_cuda() && arg(1).is_cuda() && !at::GradMode::is_enabled()) return at::cuda::gather(arg(0), d.dim, arg(1));
#endif
      return at::gather(arg(0), d.dim, arg(1));
    case DirectExtern::Op::Mm: return matrix_product(d, arg(0), arg(1), lt);
    case DirectExtern::Op::Bmm:
      if (arg(0).dim() == 3 && arg(1).dim() == 3) return batched(arg(0), arg(1));
      return at::bmm(arg(0), arg(1));  // its message for the wrong shapes
    case DirectExtern::Op::Matmul:
      if (arg(0).dim() == 2 && arg(1).dim() == 2) return matrix_product(d, arg(0), arg(1), lt);
      if (arg(1).dim() == 2)
        if (at::Tensor y = rows_product(d, arg(0), arg(1), lt); y.defined()) return y;
      if (at::Tensor y = batch_product(arg(0), arg(1)); y.defined()) return y;
      return at::matmul(arg(0), arg(1));
  }
  return {};
}

uint64_t direct_extern_calls() { return calls.load(std::memory_order_relaxed); }

bool direct_externs_enabled() {
  const char* v = std::getenv("KILN_DIRECT_EXTERNS");
  return !(v && std::strcmp(v, "0") == 0);
}

}  // namespace kiln::runtime
